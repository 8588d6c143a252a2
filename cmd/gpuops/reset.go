package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/provision"
)

func resetCommand() *cli.Command {
	return &cli.Command{
		Name:  "reset",
		Usage: "remove what gpuops applied, and nothing else",
		Description: "Removes the node labels gpuops owns (server-side apply ownership; a label another\n" +
			"manager also holds stays), the operand DaemonSets only gpuops shaped, and the namespace\n" +
			"if gpuops created it and nothing else lives there; waits until they are gone. k8s/ and\n" +
			"out/ stay: they record what was done.",
		Flags: []cli.Flag{labFlag(), timeoutFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			lab, cl, err := prepare(c, access.Reset)
			if err != nil {
				return err
			}
			return provision.Reset(c.Context, cl.Kube, lab.Namespace, provisionOptions(c))
		},
	}
}
