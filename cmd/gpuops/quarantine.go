package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/quarantine/actor"
)

func quarantineCommand(e cliopts.Env) *cli.Command {
	return group(&cli.Command{
		Name:  "quarantine",
		Usage: "what serve --quarantine holds, and a person's hand on it: status, release NODE, reset",
		Description: "serve --quarantine=on cordons a GPU node health has judged unusable for --quarantine-after, with a\n" +
			"record of its own on the node (annotation gpuops.io/quarantine: cause, since), and uncordons it once\n" +
			"usable again; past --quarantine-max nodes its fuse trips (ConfigMap gpuops-quarantine in the namespace)\n" +
			"and it stops acting until a person resets it. See docs/quarantine.md.",
		Subcommands: []*cli.Command{quarantineStatusCommand(e), quarantineReleaseCommand(e), quarantineResetCommand(e)},
	})
}

// statusOptions are a status command's (guard status, quarantine status):
// -o, the namespace, and what it reads and prints.
type statusOptions struct {
	cliopts.Env
	cliopts.Output
	Lab cliopts.Lab
	run func(context.Context, *statusOptions) error
}

func newStatus(e cliopts.Env, run func(context.Context, *statusOptions) error) *statusOptions {
	return &statusOptions{Env: e, Output: cliopts.PlainOutput("the state"), run: run}
}

func (o *statusOptions) Complete(*cli.Context) error {
	if err := o.Lab.Complete(o.Kube); err != nil {
		return err
	}
	return o.Parse(o.Out)
}

func (o *statusOptions) Validate() error { return nil } // -o is checked as it is parsed

func (o *statusOptions) Run(ctx context.Context) error { return o.run(ctx, o) }

func quarantineStatusCommand(e cliopts.Env) *cli.Command {
	o := newStatus(e, func(ctx context.Context, o *statusOptions) error {
		cl, err := o.Connect()
		if err != nil {
			return err
		}
		st, err := actor.Status(ctx, cl.Kube, o.Lab.Namespace)
		if err != nil {
			return err
		}
		if err := o.Printer.Quarantine(o.Out, st); err != nil {
			return err
		}
		if st.Fuse.Tripped {
			return cliopts.ErrFinding
		}
		return nil
	})
	return command(&cli.Command{
		Name:  "status",
		Usage: "the fuse, and every node gpuops's quarantine holds with its cause and since when",
		Description: "Reads the fuse's ConfigMap and every node (their gpuops record and cordon). Exit 1 while the\n" +
			"fuse is tripped: serve quarantines and releases nothing until gpuops quarantine reset.",
		Flags: []cli.Flag{o.Flag()},
	}, o)
}

type quarantineReleaseOptions struct {
	cliopts.Env
	Lab  cliopts.Lab
	args []string
}

func quarantineReleaseCommand(e cliopts.Env) *cli.Command {
	o := &quarantineReleaseOptions{Env: e}
	return command(&cli.Command{
		Name:  "release",
		Usage: "lift gpuops's quarantine of a node now: its record and its cordon",
		Description: "Refused for a node gpuops's quarantine does not hold (someone else's cordon is theirs to lift).\n" +
			"The cordon stays when another actor has marked the node since. If the node is still unusable, serve\n" +
			"quarantines it again after --quarantine-after.",
	}, o)
}

func (o *quarantineReleaseOptions) forms() []kubectlcli.Form { return args(nodeArg) }

func (o *quarantineReleaseOptions) Complete(c *cli.Context) error {
	o.args = c.Args().Slice()
	return o.Lab.Complete(o.Kube)
}

func (o *quarantineReleaseOptions) Validate() error {
	if len(o.args) != 1 {
		return cliopts.UsageError(fmt.Errorf("want exactly one NODE, got %d arguments", len(o.args)))
	}
	return cliopts.CheckNodeName(o.args[0])
}

func (o *quarantineReleaseOptions) Run(ctx context.Context) error {
	cl, err := o.ConnectWith(ctx, []access.Need{{Verbs: []string{"get", "patch"}, Resource: "nodes"}})
	if err != nil {
		return err
	}
	if err := actor.ReleaseNode(ctx, cl.Kube, o.Lab.Namespace, o.args[0]); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "node/%s released\n", o.args[0])
	return err
}

type quarantineResetOptions struct {
	cliopts.Env
	Lab cliopts.Lab
}

func quarantineResetCommand(e cliopts.Env) *cli.Command {
	o := &quarantineResetOptions{Env: e}
	return command(&cli.Command{
		Name:  "reset",
		Usage: "reset the tripped fuse: serve acts again",
		Description: "Deletes the fuse's ConfigMap. Look first at why so many nodes broke at once (gpuops quarantine\n" +
			"status, gpuops health --explain): the fuse is there because that is rarely the nodes' own fault.",
	}, o)
}

func (o *quarantineResetOptions) Complete(*cli.Context) error { return o.Lab.Complete(o.Kube) }

func (o *quarantineResetOptions) Validate() error { return nil }

func (o *quarantineResetOptions) Run(ctx context.Context) error {
	cl, err := o.ConnectWith(ctx, []access.Need{{Verbs: []string{"delete"}, Resource: "configmaps", Namespace: o.Lab.Namespace}})
	if err != nil {
		return err
	}
	was, err := actor.Reset(ctx, cl.Kube, o.Lab.Namespace)
	if err != nil {
		return err
	}
	msg := "fuse reset\n"
	if !was {
		msg = "fuse: not tripped, nothing to reset\n"
	}
	_, err = fmt.Fprint(o.Out, msg)
	return err
}
