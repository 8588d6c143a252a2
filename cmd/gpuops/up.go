package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/provision"
)

type upOptions struct{ provisioning }

func upCommand(e cliopts.Env) *cli.Command {
	o := &upOptions{newProvisioning(e)}
	return command(&cli.Command{
		Name:  "up",
		Usage: "provision the lab: namespace, node labels, the five operand DaemonSets; wait until settled",
		Description: "Creates the namespace if missing, sets the lab spec's node labels, writes the rendered\n" +
			"DaemonSets to k8s/ and applies them (server-side apply, field manager \"gpuops\"), waits until\n" +
			"each has exactly its admitted nodes running one pod (progress on stderr), then writes\n" +
			"out/roster.txt and out/driver.txt from the live API. Checks everything before changing\n" +
			"anything; refuses labels and DaemonSets another manager owns unless --force. Running it\n" +
			"again with nothing changed changes nothing.",
		Flags: []cli.Flag{o.Lab.SpecFlag(), o.workdirFlag(), o.timeoutFlag(), o.forceFlag(forceUsage)},
	}, o)
}

func (o *upOptions) Run(ctx context.Context) error {
	lab, cl, err := o.prepare(ctx, access.Provision)
	if err != nil {
		return err
	}
	_, err = provision.Up(ctx, cl.Kube, lab, assets, o.workspace(), o.options())
	return err
}
