package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/plan"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
)

func optOutCommand(e cliopts.Env) *cli.Command {
	o := newRelabel(e, false)
	return command(&cli.Command{
		Name:  "optout",
		Usage: "take NODE (or every node -l selects) out of OPERAND: set its deploy label to \"false\", wait until settled",
		Description: "Plans the change first: which labels change on which nodes, each DaemonSet's\n" +
			"desiredNumberScheduled before -> after (predicted from the node list), and which order rule\n" +
			"(order-check --all-rules, judged on the labels) the new labels would break. A plan that\n" +
			"breaks one is refused (exit 2, nothing changed): opting out the container toolkit under a\n" +
			"device plugin, say. --with-dependents first opts out, in reverse start-up order, every\n" +
			"operand that needs OPERAND and is on, waiting until their pods are gone.\n\n" +
			"Then reads the operand DaemonSet's desiredNumberScheduled once settled (BEFORE), sets\n" +
			"nvidia.com/gpu.deploy.<OPERAND>=false on the nodes (all at once, or --max-unavailable at a\n" +
			"time), waits until settled, reads it again (AFTER) and writes out/optout.txt. The other\n" +
			"labels gpuops set on the nodes stay as they are.",
		Flags: append(o.flags(), o.workdirFlag(), o.withFlag("with-dependents", plan.WithDependents,
			"first opt out, in reverse start-up order, every operand that needs OPERAND")),
	}, o)
}

// relabelOptions are optout's (on=false) and optin's (on=true).
type relabelOptions struct {
	provisioning
	cliopts.Output
	on   bool
	r    provision.Relabel
	args []string
}

func newRelabel(e cliopts.Env, on bool) *relabelOptions {
	return &relabelOptions{provisioning: newProvisioning(e), Output: cliopts.PlainOutput("--dry-run's plan"), on: on}
}

func (o *relabelOptions) forms() []kubectlcli.Form {
	return append(args(nodeArg, operandArg), kubectlcli.Form{Flag: "l", Value: "SELECTOR", Args: []kubectlcli.Arg{{Kind: operandArg}}})
}

func (o *relabelOptions) flags() []cli.Flag {
	return []cli.Flag{
		o.Lab.SpecFlag(), o.timeoutFlag(),
		o.forceFlag("take over labels that another field manager owns, and carry out a change that breaks the start-up order (with a warning)"),
		&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Destination: &o.r.Selector, Usage: "change every node this label selector picks (kubectl -l), all or nothing, instead of NODE"},
		&cli.IntFlag{Name: "max-unavailable", Destination: &o.r.MaxUnavailable, Usage: "with -l: take this many nodes at a time through every step (0: all at once)"},
		&cli.BoolFlag{Name: "dry-run", Destination: &o.r.DryRun, Usage: "print the plan and send the labels with server-side dry run; change nothing"},
		o.Flag(),
	}
}

// withFlag is --with-dependents or --with-dependencies: the plan's mode.
func (o *relabelOptions) withFlag(name string, mode plan.Mode, usage string) cli.Flag {
	return &cli.BoolFlag{Name: name, Usage: usage, Action: func(_ *cli.Context, on bool) error {
		if on {
			o.r.Mode = mode
		}
		return nil
	}}
}

// Complete takes the operand (the last argument) and the node (the first,
// without -l), and parses -o.
func (o *relabelOptions) Complete(c *cli.Context) error {
	o.args = c.Args().Slice()
	o.r.On = o.on
	if n := len(o.args); n > 0 {
		o.r.Operand = o.args[n-1]
		if o.r.Selector == "" && n == 2 {
			o.r.Nodes = []string{o.args[0]}
		}
	}
	if err := o.Parse(o.Out); err != nil {
		return err
	}
	return o.provisioning.Complete(c)
}

func (o *relabelOptions) Validate() error {
	if err := o.provisioning.Validate(); err != nil {
		return err
	}
	switch n := len(o.args); {
	case o.r.Selector != "" && n != 1:
		return cliopts.UsageError(fmt.Errorf("want -l SELECTOR OPERAND, got %d arguments", n))
	case o.r.Selector == "" && n != 2:
		return cliopts.UsageError(fmt.Errorf("want NODE OPERAND, got %d arguments", n))
	case o.r.MaxUnavailable < 0:
		return cliopts.UsageError(fmt.Errorf("--max-unavailable must not be negative"))
	}
	if o.r.Selector != "" {
		if _, err := labels.Parse(o.r.Selector); err != nil {
			return cliopts.UsageError(fmt.Errorf("--selector: %w", err))
		}
	} else if err := cliopts.CheckNodeName(o.r.Nodes[0]); err != nil {
		return err
	}
	if o.Format() != report.Text && !o.r.DryRun {
		return cliopts.UsageError(fmt.Errorf("--output %s prints the plan of a --dry-run", o.Format()))
	}
	return nil
}

func (o *relabelOptions) Run(ctx context.Context) error {
	lab, cl, err := o.prepare(ctx, access.Relabel)
	if err != nil {
		return err
	}
	opts := o.options()
	opts.BreakOrder = opts.Force
	var res *provision.Relabelled
	if o.on {
		res, err = provision.OptIn(ctx, cl.Kube, lab.Namespace, o.r, opts)
	} else {
		res, err = provision.OptOut(ctx, cl.Kube, lab.Namespace, o.workspace(), o.r, opts)
	}
	if o.r.DryRun && res != nil && err != nil { // refused: the plan says what was sent
		return cmp.Or(o.Printer.Plan(o.Out, res.Plan), err)
	}
	if err != nil {
		return err
	}
	return o.Printer.Relabelled(o.Out, res.Plan, res.Changes, o.r.DryRun)
}
