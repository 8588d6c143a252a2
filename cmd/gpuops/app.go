package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/words"

	"github.com/spf13/pflag"
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
)

// Exit codes scripts can trust.
const (
	exitOK      = 0 // all good
	exitFinding = 1 // the command ran and found something wrong in the cluster
	exitError   = 2 // bad input, or the cluster could not be read or changed
)

// run is the whole program: it parses args, runs one command and maps its
// error to an exit code and a one-line message on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, args := plugin.InvokedAs(args)
	app := newApp(name, stdout, stderr)
	err := plugin.Run(ctx, app, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, cliopts.ErrFinding):
		return exitFinding
	}
	fmt.Fprintf(stderr, "error: %s\n", words.ErrorLine(err))
	return exitError
}

func newApp(name string, stdout, stderr io.Writer) *cli.App {
	e := cliopts.Env{Out: stdout, ErrOut: stderr, Kube: kube.NewFlags()}
	version := newVersion(e)
	version.clientOnly = true // gpuops --version
	var showVersion bool
	app := &cli.App{
		Name:  name,
		Usage: "provision a GPU Operator lab and judge operand DaemonSets on any cluster",
		Description: "Exit codes: 0 all good, 1 a judge found something wrong, 2 bad input or the\n" +
			"cluster could not be read or changed (one line on stderr says why).",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Destination: &showVersion, Usage: "print gpuops' version (as the version command with --client)"},
		},
		Action: func(c *cli.Context) error {
			if showVersion {
				return version.Run(c.Context)
			}
			if c.NArg() > 0 {
				return cliopts.UsageError(fmt.Errorf("unknown command %q", c.Args().First()))
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			// one file per command (xCommand in x.go); a new one is listed here
			upCommand(e),
			optOutCommand(e),
			optInCommand(e),
			resetCommand(e),
			auditCommand(e),
			orderCheckCommand(e),
			matrixCommand(e),
			summaryCommand(e),
			healthCommand(e),
			capacityCommand(e),
			whyCommand(e),
			podsCommand(e),
			upgradesCommand(e),
			reportCommand(e),
			watchCommand(e),
			serveCommand(e),
			labCommand(e),
			guardCommand(e),
			quarantineCommand(e),
			collectCommand(e),
			versionCommand(e),
		},
		// urfave prints usage errors itself; make them ours (one line, exit 2).
		OnUsageError:   func(_ *cli.Context, err error, _ bool) error { return cliopts.UsageError(err) },
		ExitErrHandler: func(*cli.Context, error) {},
	}
	plugin.Adopt(app, connectionFlags(e.Kube)) // connection flags on every command; the completion command
	return app
}

// connectionFlags are kubectl's connection flags, writing into f; -n
// names where the operands run.
func connectionFlags(f *kube.Flags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	f.AddFlags(fs)
	fs.Lookup("namespace").Usage = "namespace of the operand DaemonSets, for every command (default: the --lab spec's namespace, else " +
		kube.DefaultNamespace + "; the kubeconfig context's namespace is not used)"
	return fs
}
