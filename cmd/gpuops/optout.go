package main

import (
	"cmp"
	"fmt"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/plan"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
)

func optOutCommand() *cli.Command {
	return &cli.Command{
		Name:      "optout",
		Usage:     "take NODE (or every node -l selects) out of OPERAND: set its deploy label to \"false\", wait until settled",
		ArgsUsage: "NODE OPERAND | -l SELECTOR OPERAND",
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
		Flags: append(relabelFlags(), workdirFlag(),
			&cli.BoolFlag{Name: "with-dependents", Usage: "first opt out, in reverse start-up order, every operand that needs OPERAND"}),
		Action: func(c *cli.Context) error {
			mode := plan.Only
			if c.Bool("with-dependents") {
				mode = plan.WithDependents
			}
			return setDeploy(c, false, mode)
		},
	}
}

// relabelFlags are optout's and optin's.
func relabelFlags() []cli.Flag {
	return []cli.Flag{
		labFlag(), timeoutFlag(),
		&cli.BoolFlag{Name: "force", Usage: "take over labels that another field manager owns, and carry out a change that breaks the start-up order (with a warning)"},
		&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "change every node this label selector picks (kubectl -l), all or nothing, instead of NODE"},
		&cli.IntFlag{Name: "max-unavailable", Usage: "with -l: take this many nodes at a time through every step (0: all at once)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and send the labels with server-side dry run; change nothing"},
		noTableOutputFlag("--dry-run's plan"),
	}
}

// setDeploy is optout (on=false) and optin (on=true).
func setDeploy(c *cli.Context, on bool, mode plan.Mode) error {
	r := provision.Relabel{On: on, Mode: mode, Selector: c.String("selector"), MaxUnavailable: c.Int("max-unavailable"), DryRun: c.Bool("dry-run")}
	switch {
	case r.Selector != "" && c.NArg() != 1:
		return usageError(fmt.Errorf("want -l SELECTOR OPERAND, got %d arguments", c.NArg()))
	case r.Selector == "" && c.NArg() != 2:
		return usageError(fmt.Errorf("want NODE OPERAND, got %d arguments", c.NArg()))
	case r.MaxUnavailable < 0:
		return usageError(fmt.Errorf("--max-unavailable must not be negative"))
	}
	r.Operand = c.Args().Get(c.NArg() - 1)
	if r.Selector != "" {
		if _, err := labels.Parse(r.Selector); err != nil {
			return usageError(fmt.Errorf("--selector: %w", err))
		}
	} else {
		r.Nodes = []string{c.Args().First()}
		if err := checkNodeName(r.Nodes[0]); err != nil {
			return err
		}
	}
	p, err := printerFor(c, report.Plain...)
	if err != nil {
		return err
	}
	if p.Format != report.Text && !r.DryRun {
		return usageError(fmt.Errorf("--output %s prints the plan of a --dry-run", p.Format))
	}
	lab, cl, err := prepare(c, access.Relabel)
	if err != nil {
		return err
	}
	opts := provisionOptions(c)
	opts.BreakOrder = opts.Force
	var res *provision.Result
	if on {
		res, err = provision.OptIn(c.Context, cl.Kube, lab.Namespace, r, opts)
	} else {
		res, err = provision.OptOut(c.Context, cl.Kube, lab.Namespace, workspaceOf(c), r, opts)
	}
	if r.DryRun && res != nil && err != nil { // refused: the plan says what was sent
		return cmp.Or(p.Plan(c.App.Writer, res.Plan), err)
	}
	if err != nil {
		return err
	}
	return p.Relabelled(c.App.Writer, res, r.DryRun)
}
