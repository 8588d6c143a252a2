package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Flags for real clusters, beyond the lab: which operands, which rules, and why.

func discoverFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "discover",
		Usage: "judge the operands the namespace's DaemonSets run (any nvidia.com/gpu.deploy.<name> key in a\n" +
			"DaemonSet's node selection is operand <name>), not only the lab's five",
	}
}

func explainFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "explain",
		Usage: "say why each operand is MISSING, which pods are UNEXPECTED on nodes with\n" +
			"nvidia.com/gpu.deploy.operands=false, and WARNING of deploy labels that are neither true nor false\n" +
			"(JSON output always includes this)",
	}
}

func allRulesFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "all-rules",
		Usage: "check the operator's whole start-up order: device plugin, GFD, DCGM, DCGM exporter and MIG manager\n" +
			"need the container toolkit; the toolkit needs a driver (a driver pod, or driver label false or\n" +
			"pre-installed: the host's)",
	}
}

// roster is the lab's five, or with --discover the operands found in the
// snapshot's DaemonSets (read when opts asked for them).
func roster(c *cli.Context, s *snapshot.Snapshot) []operand.Operand {
	if c.Bool("discover") {
		return discover.Roster(s.DaemonSets)
	}
	return operand.Lab
}
