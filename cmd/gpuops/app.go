package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

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

// findingIf is a judge's exit: errFinding when it found something.
func findingIf(found bool) error {
	if found {
		return errFinding
	}
	return nil
}

// run is the whole program: it parses args, runs one command and maps its
// error to an exit code and a one-line message on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, completing := invokedAs(args[0])
	app := newApp(name, stdout, stderr)
	switch {
	case completing:
		return complete(ctx, app, append([]string{cobra.ShellCompRequestCmd}, args[1:]...), stdout, stderr)
	case isCompletionRequest(args[1:]):
		return complete(ctx, app, args[1:], stdout, stderr)
	}
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

// invokedAs names the program as it was called: as a kubectl plugin
// (kubectl-gpuops on PATH), help and errors say "kubectl gpuops"; kubectl
// asks kubectl_complete-gpuops for the plugin's completions.
func invokedAs(argv0 string) (name string, completing bool) {
	switch strings.TrimSuffix(filepath.Base(argv0), ".exe") {
	case "kubectl-gpuops":
		return "kubectl gpuops", false
	case "kubectl_complete-gpuops":
		return "kubectl gpuops", true
	}
	return "gpuops", false
}

func newApp(name string, stdout, stderr io.Writer) *cli.App {
	cf := kube.NewFlags()
	fs := kubectlFlagSet(cf)
	app := &cli.App{
		Name:  name,
		Usage: "provision a GPU Operator lab and judge operand DaemonSets on any cluster",
		Description: "Exit codes: 0 all good, 1 a judge found something wrong, 2 bad input or the\n" +
			"cluster could not be read or changed (one line on stderr says why).",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "version", Usage: "print gpuops' version (as the version command with --client)"},
		}, connectionFlags(fs, true)...),
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				return printVersion(c, true)
			}
			if c.NArg() > 0 {
				return usageError(fmt.Errorf("unknown command %q", c.Args().First()))
			}
			return cli.ShowAppHelp(c)
		},
		Metadata: map[string]any{configFlagsKey: cf, kubectlFlagsKey: fs},
		Commands: []*cli.Command{
			// one file per command; each adds itself here
			upCommand(),
			optOutCommand(),
			optInCommand(),
			resetCommand(),
			auditCommand(),
			orderCheckCommand(),
			matrixCommand(),
			summaryCommand(),
			healthCommand(),
			reportCommand(),
			watchCommand(),
			serveCommand(),
			labCommand(),
			guardCommand(),
			versionCommand(),
			completionCommand(strings.ReplaceAll(name, " ", "-")),
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
			cmd.Flags = append(cmd.Flags, connectionFlags(fs, false)...)
			if len(cmd.Subcommands) == 0 { // a parent's help lists its subcommands instead
				cmd.CustomHelpTemplate = cli.CommandHelpTemplate + connectionHelp
			}
			cmd.Description = strings.ReplaceAll(cmd.Description, "`gpuops ", "`"+name+" ")
			adopt(cmd.Subcommands)
		}
	}
	adopt(app.Commands)
	return app
}

// connectionHelp ends each command's help, which lists only its own flags.
const connectionHelp = `
CONNECTION:
   kubectl's connection flags (--kubeconfig, --context, -n, --as, --server, --token, ...) go before or
   after the command; the help without a command lists them all.
`

func usageError(err error) error { return fmt.Errorf("%w (see --help)", err) }

// oneLine keeps an error to the single line a script can log.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
