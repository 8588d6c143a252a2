package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/provision"
)

func optOutCommand() *cli.Command {
	return &cli.Command{
		Name:      "optout",
		Usage:     "take NODE out of OPERAND: set its deploy label to \"false\", wait until settled",
		ArgsUsage: "NODE OPERAND",
		Description: "Reads the operand DaemonSet's desiredNumberScheduled once settled (BEFORE), sets\n" +
			"nvidia.com/gpu.deploy.<OPERAND>=false on NODE, waits until settled, reads it again (AFTER)\n" +
			"and writes out/optout.txt. The other labels gpuops set on NODE stay as they are.",
		Flags: []cli.Flag{labFlag(), workdirFlag(), timeoutFlag(), forceFlag()},
		Action: func(c *cli.Context) error {
			return setDeploy(c, false)
		},
	}
}

// setDeploy is optout (on=false) and optin (on=true).
func setDeploy(c *cli.Context, on bool) error {
	if c.NArg() != 2 {
		return usageError(fmt.Errorf("want NODE OPERAND, got %d arguments", c.NArg()))
	}
	node, name := c.Args().Get(0), c.Args().Get(1)
	if err := checkNodeName(node); err != nil {
		return err
	}
	lab, cl, err := prepare(c, access.Relabel)
	if err != nil {
		return err
	}
	opts := provisionOptions(c)
	var ch *provision.Change
	if on {
		ch, err = provision.OptIn(c.Context, cl.Kube, lab.Namespace, node, name, opts)
	} else {
		ch, err = provision.OptOut(c.Context, cl.Kube, lab.Namespace, workspaceOf(c), node, name, opts)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "daemonset.apps/%s desiredNumberScheduled %s -> %s\n", ch.DaemonSet, ch.Before, ch.After)
	return err
}
