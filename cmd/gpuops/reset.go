package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/provision"
)

type resetOptions struct{ provisioning }

func resetCommand(e cliopts.Env) *cli.Command {
	o := &resetOptions{newProvisioning(e)}
	return command(&cli.Command{
		Name:  "reset",
		Usage: "remove what gpuops applied, and nothing else",
		Description: "Removes the node labels gpuops owns (server-side apply ownership; a label another\n" +
			"manager also holds stays), the operand DaemonSets only gpuops shaped, and the namespace\n" +
			"if gpuops created it and nothing else lives there; waits until they are gone. k8s/ and\n" +
			"out/ stay: they record what was done.",
		Flags: []cli.Flag{o.Lab.SpecFlag(), o.timeoutFlag()},
	}, o)
}

func (o *resetOptions) Run(ctx context.Context) error {
	lab, cl, err := o.prepare(ctx, access.Reset)
	if err != nil {
		return err
	}
	return provision.Reset(ctx, cl.Kube, lab.Namespace, o.options())
}
