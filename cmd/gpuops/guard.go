package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
)

func guardCommand() *cli.Command {
	return &cli.Command{
		Name:  "guard",
		Usage: "an admission policy that refuses node label changes which break the operator's start-up order",
		Description: "The guard is a ValidatingAdmissionPolicy (and its binding), both named gpuops-guard, that\n" +
			"the API server applies to every Node CREATE and UPDATE, whoever sends it. It refuses a\n" +
			"change whose deploy labels break an order rule (order-check --all-rules, judged on the\n" +
			"labels) that the node's old labels did not break: e.g. device-plugin=true while\n" +
			"container-toolkit is not true. Changes that keep or mend a broken node pass, and so do\n" +
			"the exempt users (the GPU Operator's own service accounts by default).",
		Subcommands: []*cli.Command{guardInstallCommand(), guardStatusCommand(), guardUninstallCommand()},
	}
}

func guardInstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "apply the guard and wait until the API server enforces it",
		Description: "Renders the policy from the embedded kustomize base (kustomize/guard) with one CEL\n" +
			"validation per order rule, applies it and its binding with server-side apply (field\n" +
			"manager gpuops), then waits until a dry-run Node that breaks a rule is refused (deny) or\n" +
			"warned about (warn). Installing again updates it in place.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: string(guard.Deny), Usage: "deny: refuse the change; warn: let it through with a warning (and an audit annotation)"},
			&cli.StringSliceFlag{Name: "exempt", Usage: "usernames the guard does not judge, repeatable or comma separated; --exempt= for none\n" +
				"\t(default: these service accounts of the GPU Operator in --namespace: " + strings.Join(guard.OperatorAccounts, ", ") + ")"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the policy and binding and send them with server-side dry run; change nothing"},
			timeoutFlag(),
			&cli.BoolFlag{Name: "force", Usage: "take over a policy or binding of that name that another field manager applied"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			mode := guard.Mode(c.String("mode"))
			if !slices.Contains(guard.Modes, mode) {
				return usageError(fmt.Errorf("unknown --mode %q (want deny or warn)", mode))
			}
			ns, err := namespace(c)
			if err != nil {
				return err
			}
			cl, err := connectWith(c, access.GuardInstall())
			if err != nil {
				return err
			}
			exempt := guard.DefaultExempt(ns)
			if c.IsSet("exempt") {
				exempt = slices.DeleteFunc(c.StringSlice("exempt"), func(s string) bool { return s == "" })
			}
			objs, err := guard.Render(assets.Kustomize, operand.AllRules, guard.Options{Mode: mode, Exempt: exempt})
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				if err := provision.DryRunGuard(c.Context, cl.Kube, objs); err != nil {
					return err
				}
				return report.GuardObjects(c.App.Writer, objs)
			}
			e, err := provision.InstallGuard(c.Context, cl.Kube, objs, provisionOptions(c))
			if err != nil {
				return err
			}
			return report.GuardEnforcement(c.App.Writer, e)
		},
	}
}

func guardStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "is the guard installed, in which mode, and how many nodes break a rule now",
		Description: "Reads the policy and its binding, and judges every node's deploy labels by the same\n" +
			"rules. A node that breaks a rule now is let be by the guard, but any change that breaks\n" +
			"one more rule there is refused. Exit 0 whatever it finds.",
		Flags: []cli.Flag{noTableOutputFlag("the state")},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			p, err := printerFor(c, report.Plain...)
			if err != nil {
				return err
			}
			cl, err := connectWith(c, access.GuardStatus())
			if err != nil {
				return err
			}
			ns, err := namespace(c)
			if err != nil {
				return err
			}
			st, err := guardState(c.Context, cl, ns)
			if err != nil {
				return err
			}
			return p.Guard(c.App.Writer, st)
		},
	}
}

func guardUninstallCommand() *cli.Command {
	return &cli.Command{
		Name:        "uninstall",
		Usage:       "delete the guard's binding and policy, if gpuops installed them",
		Description: "Deletes the binding, then the policy. One that another field manager applied is left\n" + "alone unless --force. Nothing installed is no error.",
		Flags:       []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "delete a gpuops-guard policy or binding that gpuops did not apply"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			cl, err := connectWith(c, access.GuardUninstall())
			if err != nil {
				return err
			}
			installed, err := provision.UninstallGuard(c.Context, cl.Kube, provisionOptions(c))
			if err != nil {
				return err
			}
			return report.GuardUninstalled(c.App.Writer, installed)
		},
	}
}

// connectWith connects and makes sure the caller may do what the command needs.
func connectWith(c *cli.Context, needs []access.Need) (*kube.Clients, error) {
	cl, err := connect(c)
	if err != nil {
		return nil, err
	}
	return cl, access.Check(c.Context, cl.Kube.AuthorizationV1(), needs)
}

// noTableOutputFlag is --output of the commands without a table.
func noTableOutputFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: string(report.Text), Usage: "output format of " + what + ": text, or json or yaml (the same fields)"}
}

// guardState is the guard's objects and the pipeline's verdicts of the
// nodes' labels.
func guardState(ctx context.Context, cl *kube.Clients, ns string) (guard.State, error) {
	policy, binding, err := provision.Guard(ctx, cl.Kube)
	if err != nil {
		return guard.State{}, err
	}
	r, err := pipeline.Run(ctx, cl.Kube, pipeline.Options{Namespace: ns, Roster: pipeline.LabRoster, LabelsOnly: true})
	if err != nil {
		return guard.State{}, err
	}
	return guard.Judge(policy, binding, r.Nodes, operand.AllRules), nil
}
