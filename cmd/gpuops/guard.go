package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
)

func guardCommand(e cliopts.Env) *cli.Command {
	return group(&cli.Command{
		Name:  "guard",
		Usage: "an admission policy that refuses node label changes which break the operator's start-up order",
		Description: "The guard is a ValidatingAdmissionPolicy (and its binding), both named gpuops-guard, that\n" +
			"the API server applies to every Node CREATE and UPDATE, whoever sends it. It refuses a\n" +
			"change whose deploy labels break an order rule (order-check --all-rules, judged on the\n" +
			"labels) that the node's old labels did not break: e.g. device-plugin=true while\n" +
			"container-toolkit is not true. Changes that keep or mend a broken node pass, and so do\n" +
			"the exempt users (the GPU Operator's own service accounts by default).",
		Subcommands: []*cli.Command{guardInstallCommand(e), guardStatusCommand(e), guardUninstallCommand(e)},
	})
}

type guardInstallOptions struct {
	provisioning
	mode      string
	exempt    cli.StringSlice
	exemptSet bool
	dryRun    bool
	exemptAre []string // the exempt users, as the flags leave them
}

func guardInstallCommand(e cliopts.Env) *cli.Command {
	o := &guardInstallOptions{provisioning: newProvisioning(e)}
	return command(&cli.Command{
		Name:  "install",
		Usage: "apply the guard and wait until the API server enforces it",
		Description: "Renders the policy from the embedded kustomize base (kustomize/guard) with one CEL\n" +
			"validation per order rule, applies it and its binding with server-side apply (field\n" +
			"manager gpuops), then waits until a dry-run Node that breaks a rule is refused (deny) or\n" +
			"warned about (warn). Installing again updates it in place.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "mode", Value: string(guard.Deny), Destination: &o.mode, Usage: "deny: refuse the change; warn: let it through with a warning (and an audit annotation)"},
			&cli.StringSliceFlag{Name: "exempt", Destination: &o.exempt, Action: func(*cli.Context, []string) error { o.exemptSet = true; return nil },
				Usage: "usernames the guard does not judge, repeatable or comma separated; --exempt= for none\n" +
					"\t(default: these service accounts of the GPU Operator in --namespace: " + strings.Join(operand.OperatorAccounts, ", ") + ")"},
			&cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun, Usage: "print the policy and binding and send them with server-side dry run; change nothing"},
			o.timeoutFlag(),
			o.forceFlag("take over a policy or binding of that name that another field manager applied"),
		},
	}, o)
}

// Complete resolves the namespace and the exempt users: by default the
// operator's accounts in the namespace.
func (o *guardInstallOptions) Complete(c *cli.Context) error {
	if err := o.provisioning.Complete(c); err != nil {
		return err
	}
	o.exemptAre = guard.DefaultExempt(o.Lab.Namespace)
	if o.exemptSet {
		o.exemptAre = slices.DeleteFunc(o.exempt.Value(), func(s string) bool { return s == "" })
	}
	return nil
}

func (o *guardInstallOptions) Validate() error {
	if err := o.provisioning.Validate(); err != nil {
		return err
	}
	if mode := guard.Mode(o.mode); !slices.Contains(guard.Modes, mode) {
		return cliopts.UsageError(fmt.Errorf("unknown --mode %q (want deny or warn)", mode))
	}
	return nil
}

// Run renders the guard, then applies it (or sends it in a dry run).
func (o *guardInstallOptions) Run(ctx context.Context) error {
	objs, err := guard.Render(assets.Kustomize, operand.AllRules, guard.Options{Mode: guard.Mode(o.mode), Exempt: o.exemptAre})
	if err != nil {
		return err
	}
	cl, err := o.ConnectWith(ctx, access.GuardInstall())
	if err != nil {
		return err
	}
	if o.dryRun {
		if err := provision.DryRunGuard(ctx, cl.Kube, objs); err != nil {
			return err
		}
		return report.GuardObjects(o.Out, objs)
	}
	e, err := provision.InstallGuard(ctx, cl.Kube, objs, o.options())
	if err != nil {
		return err
	}
	return report.GuardEnforcement(o.Out, e)
}

func guardStatusCommand(e cliopts.Env) *cli.Command {
	o := newStatus(e, func(ctx context.Context, o *statusOptions) error {
		cl, err := o.ConnectWith(ctx, access.GuardStatus())
		if err != nil {
			return err
		}
		st, err := provision.GuardStatus(ctx, cl.Kube, o.Lab.Namespace)
		if err != nil {
			return err
		}
		return o.Printer.Guard(o.Out, st)
	})
	return command(&cli.Command{
		Name:  "status",
		Usage: "is the guard installed, in which mode, and how many nodes break a rule now",
		Description: "Reads the policy and its binding, and judges every node's deploy labels by the same\n" +
			"rules. A node that breaks a rule now is let be by the guard, but any change that breaks\n" +
			"one more rule there is refused. Exit 0 whatever it finds.",
		Flags: []cli.Flag{o.Flag()},
	}, o)
}

type guardUninstallOptions struct{ provisioning }

func guardUninstallCommand(e cliopts.Env) *cli.Command {
	o := &guardUninstallOptions{newProvisioning(e)}
	return command(&cli.Command{
		Name:        "uninstall",
		Usage:       "delete the guard's binding and policy, if gpuops installed them",
		Description: "Deletes the binding, then the policy. One that another field manager applied is left\n" + "alone unless --force. Nothing installed is no error.",
		Flags:       []cli.Flag{o.forceFlag("delete a gpuops-guard policy or binding that gpuops did not apply")},
	}, o)
}

func (o *guardUninstallOptions) Run(ctx context.Context) error {
	cl, err := o.ConnectWith(ctx, access.GuardUninstall())
	if err != nil {
		return err
	}
	installed, err := provision.UninstallGuard(ctx, cl.Kube, o.options())
	if err != nil {
		return err
	}
	return report.GuardUninstalled(o.Out, installed)
}
