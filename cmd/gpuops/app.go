package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
)

// Exit codes scripts can trust.
const (
	exitOK      = 0 // all good
	exitFinding = 1 // the command ran and found something wrong in the cluster
	exitError   = 2 // bad input, or the cluster could not be read or changed
)

// errFinding is returned by a judging command whose verdict is "not good";
// its output already said why.
var errFinding = errors.New("finding")

// run is the whole program: it parses args, runs one command and maps its
// error to an exit code and a one-line message on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFinding):
		return exitFinding
	}
	fmt.Fprintf(stderr, "error: %s\n", oneLine(err))
	return exitError
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "gpuops",
		Usage: "provision a GPU Operator lab and judge operand DaemonSets on any cluster",
		Description: "Exit codes: 0 all good, 1 a judge found something wrong, 2 bad input or the\n" +
			"cluster could not be read or changed (one line on stderr says why).",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Flags:           globalFlags(),
		Commands: []*cli.Command{
			// one file per command; each adds itself here
			upCommand(),
			optOutCommand(),
			optInCommand(),
			resetCommand(),
			auditCommand(),
			orderCheckCommand(),
			matrixCommand(),
			labCommand(),
		},
		// urfave prints usage errors itself; make them ours (one line, exit 2).
		OnUsageError:   func(_ *cli.Context, err error, _ bool) error { return usageError(err) },
		ExitErrHandler: func(*cli.Context, error) {},
	}
	// A command's own flag errors would otherwise print its help on stdout.
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
	}
	return app
}

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "kubeconfig", Usage: "path to the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)"},
		&cli.StringFlag{Name: "context", Usage: "kubeconfig context to use (default: its current context)"},
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Value: kube.DefaultNamespace, Usage: "namespace of the operand DaemonSets"},
		&cli.DurationFlag{Name: "request-timeout", Value: 30 * time.Second, Usage: "timeout of each API request"},
	}
}

// connect builds API clients from the global flags.
func connect(c *cli.Context) (*kube.Clients, error) {
	return kube.Connect(kube.Flags{
		Kubeconfig: c.String("kubeconfig"),
		Context:    c.String("context"),
		Namespace:  c.String("namespace"),
		Timeout:    c.Duration("request-timeout"),
	})
}

func usageError(err error) error { return fmt.Errorf("%w (see --help)", err) }

// oneLine keeps an error to the single line a script can log.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
