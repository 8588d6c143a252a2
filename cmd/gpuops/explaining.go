package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/pipeline"
)

// Flags for real clusters, beyond the lab: which operands, which rules, and why.

func discoverFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "discover",
		Usage: "judge the operands the namespace's DaemonSets run (any nvidia.com/gpu.deploy.<name> key in a\n" +
			"DaemonSet's node selection is operand <name>), not only the lab's five. Unset, gpuops discovers on\n" +
			"a GPU Operator install (a ClusterPolicy for the namespace, or a DaemonSet the operator renders)\n" +
			"and judges the lab's five elsewhere; --discover=false always judges the lab's five",
	}
}

func stuckAfterFlag() cli.Flag {
	return &cli.DurationFlag{
		Name: "stuck-after", Value: pipeline.DefaultStuckAfter, Action: durationAtLeast("stuck-after", 0, "0 (never) or a positive duration such as 30m"),
		Usage: "a helper's pause of an operand (paused-for-driver-upgrade, -mig-change, -vgpu-change) older than\n" +
			"this is STUCK, a finding; its age is the time its writer last wrote the node (managedFields). 0: never",
	}
}

func explainFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "explain",
		Usage: "say why each operand is MISSING or STUCK, which pods are UNEXPECTED on nodes with\n" +
			"nvidia.com/gpu.deploy.operands=false, and WARNING of labels in another state: a helper's pause (who,\n" +
			"when, its progress), a host that provides the operand, a value that is neither true nor false,\n" +
			"deploy labels on a node without nvidia.com/gpu.present=true; notes on stderr (JSON output always\n" +
			"includes all of this, and the operands the ClusterPolicy switches off)",
	}
}

func allRulesFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "all-rules",
		Usage: "check the operator's whole start-up order: device plugin, GFD, DCGM, DCGM exporter, MIG manager and\n" +
			"the operator validator need the container toolkit; the toolkit and the validator need a driver (a\n" +
			"driver pod, or driver label false or pre-installed: the host's); the vGPU device manager needs the\n" +
			"vGPU manager; the DRA validator, DCGM and exporter need the DRA kubelet plugin, which needs a driver.\n" +
			"An operand the ClusterPolicy switches off counts as the hosts'",
	}
}
