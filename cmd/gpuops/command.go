package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
)

// Every command is an Options struct in kubectl's shape: its flags are
// bound to its fields, Complete fills in what the flags leave open (the
// namespace, the arguments), Validate refuses bad input (exit 2) before
// anything is read or written, and Run makes one library call, prints one
// result and returns the exit.
type options interface {
	Complete(c *cli.Context) error
	Validate() error
	Run(ctx context.Context) error
}

// positional is the Options of a command that takes positional arguments,
// declared for --help and completion (kubectlcli.Positional); Complete
// reads them. A command whose Options is not positional refuses any.
type positional interface {
	forms() []kubectlcli.Form
}

// The kinds of positional arguments, each completed as plugin.Args says.
const (
	nodeArg    = "NODE"
	operandArg = "OPERAND"
	targetArg  = "TARGET"
)

// args are the forms of one positional argument of each kind, in order.
func args(kinds ...string) []kubectlcli.Form {
	f := kubectlcli.Form{}
	for _, k := range kinds {
		f.Args = append(f.Args, kubectlcli.Arg{Kind: k})
	}
	return []kubectlcli.Form{f}
}

// command makes cmd (its name, help and flags bound to o) run o.
func command(cmd *cli.Command, o options) *cli.Command {
	p, takesArgs := o.(positional)
	if takesArgs {
		kubectlcli.Positional(cmd, p.forms()...)
	}
	cmd.Action = func(c *cli.Context) error {
		if !takesArgs && c.NArg() > 0 {
			return cliopts.UsageError(fmt.Errorf("unexpected arguments %q", c.Args().Slice()))
		}
		if err := o.Complete(c); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context)
	}
	return cmd
}

// group makes cmd a command of subcommands (guard, quarantine): without
// one it lists them; an unknown one is bad input, one line and exit 2, as
// an unknown command is (urfave/cli would say "No help topic").
func group(cmd *cli.Command) *cli.Command {
	names := make([]string, len(cmd.Subcommands))
	for i, sub := range cmd.Subcommands {
		names[i] = sub.Name
	}
	want := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	cmd.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return cliopts.UsageError(fmt.Errorf("unknown command %q for %q (want %s)", c.Args().First(), cmd.Name, want))
		}
		return cli.ShowSubcommandHelp(c)
	}
	return cmd
}
