package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
	err := app.RunContext(ctx, intersperse(app, args))
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
			guardCommand(),
		},
		// urfave prints usage errors itself; make them ours (one line, exit 2).
		OnUsageError:   func(_ *cli.Context, err error, _ bool) error { return usageError(err) },
		ExitErrHandler: func(*cli.Context, error) {},
	}
	var adopt func(cmds []*cli.Command)
	adopt = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			// A command's own flag errors would otherwise print its help on stdout.
			cmd.OnUsageError = app.OnUsageError
			// kubectl users write the connection flags after the command too.
			cmd.Flags = append(cmd.Flags, globalFlags()...)
			adopt(cmd.Subcommands)
		}
	}
	adopt(app.Commands)
	return app
}

// connect builds API clients from the global flags.
func connect(c *cli.Context) (*kube.Clients, error) {
	kubeconfig, _ := globalString(c, "kubeconfig")
	context, _ := globalString(c, "context")
	namespace, _ := globalString(c, "namespace")
	return kube.Connect(kube.Flags{
		Kubeconfig: kubeconfig,
		Context:    context,
		Namespace:  namespace,
		Timeout:    globalDuration(c, "request-timeout"),
	})
}

func usageError(err error) error { return fmt.Errorf("%w (see --help)", err) }

// oneLine keeps an error to the single line a script can log.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
