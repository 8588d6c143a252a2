// Package kubectlcli gives a urfave/cli/v2 app kubectl's conventions:
// connection flags before or after the command, interspersed arguments,
// kubectl plugin naming, and Cobra-protocol shell completion.
package kubectlcli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/urfave/cli/v2"
)

// Plugin is a program that is also the kubectl plugin of its name.
type Plugin struct {
	// Name is the program's: on PATH as kubectl-Name it is "kubectl Name",
	// and kubectl asks kubectl_complete-Name for its completions.
	Name string
	Completion
}

// InvokedAs names the program as it was called, and returns the arguments
// to run: as a kubectl plugin, help and errors say "kubectl NAME"; called
// as kubectl_complete-NAME, the arguments are a completion request.
func (p Plugin) InvokedAs(args []string) (name string, _ []string) {
	switch strings.TrimSuffix(filepath.Base(args[0]), ".exe") {
	case "kubectl-" + p.Name:
		return "kubectl " + p.Name, args
	case "kubectl_complete-" + p.Name:
		return "kubectl " + p.Name, slices.Concat(args[:1], []string{cobra.ShellCompRequestCmd}, args[1:])
	}
	return p.Name, args
}

// Adopt gives app kubectl's connection flags, those of fs, before or after
// every command (whose help says so), and the completion command; as a
// plugin, a description's `NAME ...` reads `kubectl NAME ...`.
func (p Plugin) Adopt(app *cli.App, fs *pflag.FlagSet) {
	app.Flags = append(app.Flags, connectionFlags(fs, true)...)
	app.Commands = append(app.Commands, p.completionCommand(strings.ReplaceAll(app.Name, " ", "-")))
	var adopt func(cmds []*cli.Command)
	adopt = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			// A command's own flag errors would otherwise print its help on stdout.
			cmd.OnUsageError = app.OnUsageError
			cmd.Flags = append(cmd.Flags, connectionFlags(fs, false)...)
			if len(cmd.Subcommands) == 0 { // a parent's help lists its subcommands instead
				cmd.CustomHelpTemplate = cli.CommandHelpTemplate + connectionHelp
			}
			cmd.Description = strings.ReplaceAll(cmd.Description, "`"+p.Name+" ", "`"+app.Name+" ")
			adopt(cmd.Subcommands)
		}
	}
	adopt(app.Commands)
}

// connectionHelp ends each command's help, which lists only its own flags.
const connectionHelp = `
CONNECTION:
   kubectl's connection flags (--kubeconfig, --context, -n, --as, --server, --token, ...) go before or
   after the command; the help without a command lists them all.
`

// Run runs app on args (the program's name first): a completion request
// is answered as Cobra does; any other line parses as kubectl's would.
func (p Plugin) Run(ctx context.Context, app *cli.App, args []string) error {
	if len(args) > 1 && (args[1] == cobra.ShellCompRequestCmd || args[1] == cobra.ShellCompNoDescRequestCmd) {
		return p.complete(ctx, app, args[1:])
	}
	return app.RunContext(ctx, Intersperse(app, args))
}

// usageError is err as the app's own usage errors read.
func usageError(c *cli.Context, err error) error {
	if c.App.OnUsageError == nil {
		return err
	}
	return c.App.OnUsageError(c, err, false)
}
