package main

import (
	"context"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/lab"
	"github.com/gpuops/gpuops/pkg/rehearsal"
)

type labOptions struct {
	provisioning
	scenario string
}

func labCommand(e cliopts.Env) *cli.Command {
	o := &labOptions{provisioning: newProvisioning(e)}
	return command(&cli.Command{
		Name:  "lab",
		Usage: "run the whole lab (steps 1-8 of docs/lab.md) on the current cluster and leave the workspace",
		Description: "up (steps 1-4), optout of the lab spec's optout: node and operand (step 5), audit\n" +
			"(step 6), optin of its optin: node and operand (step 7), order check of every lab node\n" +
			"and the matrix (steps 7-8). Leaves k8s/ (five manifests), out/ (roster, driver, optout,\n" +
			"audit, order and matrix .txt) and the two scripts in --workdir, then prints the matrix.\n" +
			"After `gpuops reset`, running it again writes the same out/ byte for byte.\n\n" +
			"--scenario driver-upgrade then replays a driver upgrade on the lab's driver nodes, as the GPU Operator\n" +
			"walks it, the last node failing and recovered, and cleans up; each step shows gpuops upgrades and health.\n" +
			"--scenario sharing, mig or dra writes on the lab's first READY node what the device plugin's config\n" +
			"(time-slicing, MPS), the MIG manager or the DRA kubelet plugin would write, breaks and heals each case\n" +
			"health names, and cleans up; each step shows gpuops health.\n" +
			"--scenario workloads makes GPU pods in namespace " + rehearsal.WorkloadsNamespace + " that the scheduler cannot place, each\n" +
			"for one cause gpuops why names, and one it places on a node whose toolkit a stray label switched off;\n" +
			"heals each, and cleans up; each step shows gpuops why, pods and capacity.",
		Flags: []cli.Flag{o.Lab.SpecFlag(), o.workdirFlag(), o.timeoutFlag(), o.forceFlag(forceUsage),
			&cli.StringFlag{Name: "scenario", Destination: &o.scenario, Usage: "after the lab, rehearse `NAME` (" + strings.Join(rehearsal.Scenarios, ", ") + "; default: none, the plain lab)"}},
	}, o)
}

func (o *labOptions) Validate() error {
	if err := o.provisioning.Validate(); err != nil {
		return err
	}
	if err := rehearsal.Known(o.scenario); err != nil {
		return cliopts.UsageError(err)
	}
	return nil
}

func (o *labOptions) Run(ctx context.Context) error {
	spec, cl, err := o.prepare(ctx, func(ns string) []access.Need {
		if o.scenario != "" {
			return slices.Concat(access.Provision(ns), access.Relabel(ns), rehearsal.Needs(o.scenario, ns))
		}
		return append(access.Provision(ns), access.Relabel(ns)...)
	})
	if err != nil {
		return err
	}
	if o.scenario != "" {
		if err := rehearsal.Ready(ctx, cl, o.scenario); err != nil {
			return err
		}
	}
	matrix, err := lab.Run(ctx, cl.Kube, spec, assets, o.workspace(), o.options())
	if err != nil {
		return err
	}
	if _, err := o.Out.Write(matrix); err != nil || o.scenario == "" {
		return err
	}
	return rehearsal.Narrated(ctx, cl, o.Out, spec, o.scenario, o.timeout)
}
