package main

import "github.com/urfave/cli/v2"

func optInCommand() *cli.Command {
	return &cli.Command{
		Name:      "optin",
		Usage:     "put NODE into OPERAND: set its deploy label to \"true\", wait until settled",
		ArgsUsage: "NODE OPERAND",
		Description: "Sets nvidia.com/gpu.deploy.<OPERAND>=true on NODE and waits until the operand's\n" +
			"DaemonSet has settled. The other labels gpuops set on NODE stay as they are.",
		Flags: []cli.Flag{labFlag(), timeoutFlag(), forceFlag()},
		Action: func(c *cli.Context) error {
			return setDeploy(c, true)
		},
	}
}
