package main

import (
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/labrun"
	"github.com/gpuops/gpuops/pkg/rehearsal"
)

func labCommand() *cli.Command {
	return &cli.Command{
		Name:  "lab",
		Usage: "run the whole lab (steps 1-8 of docs/lab.md) on the current cluster and leave the workspace",
		Description: "up (steps 1-4), optout of the lab spec's optout: node and operand (step 5), audit\n" +
			"(step 6), optin of its optin: node and operand (step 7), order check of every lab node\n" +
			"and the matrix (steps 7-8). Leaves k8s/ (five manifests), out/ (roster, driver, optout,\n" +
			"audit, order and matrix .txt) and the two scripts in --workdir, then prints the matrix.\n" +
			"After `gpuops reset`, running it again writes the same out/ byte for byte.\n\n" +
			"--scenario driver-upgrade then replays a driver upgrade on the lab's driver nodes, as the GPU Operator\n" +
			"walks it, the last node failing and recovered, and cleans up; each step shows gpuops upgrades and health.",
		Flags: []cli.Flag{labFlag(), workdirFlag(), timeoutFlag(), forceFlag(),
			&cli.StringFlag{Name: "scenario", Usage: "after the lab, rehearse `NAME` (driver-upgrade; default: none, the plain lab)"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if err := rehearsal.Known(c.String("scenario")); err != nil {
				return usageError(err)
			}
			lab, cl, err := prepare(c, func(ns string) []access.Need {
				if c.String("scenario") != "" {
					return slices.Concat(access.Provision(ns), access.Relabel(ns), rehearsal.Needs(ns))
				}
				return append(access.Provision(ns), access.Relabel(ns)...)
			})
			if err != nil {
				return err
			}
			matrix, err := labrun.Run(c.Context, cl.Kube, lab, assets, workspaceOf(c), provisionOptions(c))
			if err != nil {
				return err
			}
			if _, err := c.App.Writer.Write(matrix); err != nil || c.String("scenario") == "" {
				return err
			}
			return rehearsal.Lab(c.Context, cl.Kube, c.App.Writer, lab, c.Duration("timeout"))
		},
	}
}
