package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/provision"
)

func upCommand() *cli.Command {
	return &cli.Command{
		Name:  "up",
		Usage: "provision the lab: namespace, node labels, the five operand DaemonSets; wait until settled",
		Description: "Creates the namespace if missing, sets the lab spec's node labels, writes the rendered\n" +
			"DaemonSets to k8s/ and applies them (server-side apply, field manager \"gpuops\"), waits until\n" +
			"each has exactly its admitted nodes running one pod (progress on stderr), then writes\n" +
			"out/roster.txt and out/driver.txt from the live API. Checks everything before changing\n" +
			"anything; refuses labels and DaemonSets another manager owns unless --force. Running it\n" +
			"again with nothing changed changes nothing.",
		Flags: []cli.Flag{labFlag(), workdirFlag(), timeoutFlag(), forceFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			lab, cl, err := prepare(c, access.Provision)
			if err != nil {
				return err
			}
			_, err = provision.Up(c.Context, cl.Kube, lab, assets, workspaceOf(c), provisionOptions(c))
			return err
		},
	}
}
