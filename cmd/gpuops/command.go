package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/kube"
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
// named for --help and completion; Complete reads them. A command whose
// Options is not positional refuses any.
type positional interface {
	argsUsage() string
}

// env is what every command starts from: where it writes, and the
// connection flags the app parses (before or after the command).
type env struct {
	out, errOut io.Writer
	kube        *kube.Flags
}

// command makes cmd (its name, help and flags bound to o) run o.
func command(cmd *cli.Command, o options) *cli.Command {
	p, takesArgs := o.(positional)
	if takesArgs {
		cmd.ArgsUsage = p.argsUsage()
	}
	cmd.Action = func(c *cli.Context) error {
		if !takesArgs && c.NArg() > 0 {
			return usageError(fmt.Errorf("unexpected arguments %q", c.Args().Slice()))
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

// connect builds API clients from the connection flags.
func (e env) connect() (*kube.Clients, error) { return kube.Connect(e.kube) }

// connectWith connects and makes sure the caller may do what the command needs.
func (e env) connectWith(ctx context.Context, needs []access.Need) (*kube.Clients, error) {
	cl, err := e.connect()
	if err != nil {
		return nil, err
	}
	return cl, access.Check(ctx, cl.Kube.AuthorizationV1(), needs)
}

// checkNodeName refuses a NODE argument that no node can be named, before
// it reaches an API path.
func checkNodeName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return usageError(fmt.Errorf("invalid node name %q: %s", name, strings.Join(errs, "; ")))
	}
	return nil
}
