package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/plan"
)

func optInCommand(e cliopts.Env) *cli.Command {
	o := newRelabel(e, true)
	return command(&cli.Command{
		Name:  "optin",
		Usage: "put NODE (or every node -l selects) into OPERAND: set its deploy label to \"true\", wait until settled",
		Description: "Plans the change first, as optout does, and refuses one that breaks an order rule: opting\n" +
			"in the device plugin where the container toolkit is not on, say. --with-dependencies first\n" +
			"opts in, in start-up order, what OPERAND needs and the node lacks (the driver only where\n" +
			"the node has no host driver: driver label false or pre-installed), waiting until each is\n" +
			"Running. Then sets nvidia.com/gpu.deploy.<OPERAND>=true on the nodes and waits until the\n" +
			"operand's DaemonSet has settled. The other labels gpuops set on the nodes stay as they are.",
		Flags: append(o.flags(), o.withFlag("with-dependencies", plan.WithDependencies,
			"first opt in, in start-up order, what OPERAND needs and the node lacks")),
	}, o)
}
