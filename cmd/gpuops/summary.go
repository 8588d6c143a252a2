package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

func summaryCommand(e cliopts.Env) *cli.Command {
	o := newJudge(e, cliopts.JudgeOutput(report.Name), report.SummaryView, (*outcome.Result).FleetFailed)
	o.also = cliopts.FleetOptions
	return command(&cli.Command{
		Name:  "summary",
		Usage: "the fleet by node pool: per group and operand, how many nodes ask for it, run, miss, pause or disable it; then the nodes with findings",
		Description: "Groups the nodes by the value of a node label (--group-by, default " + pipeline.DefaultGroupBy + ";\n" +
			"nodes without it, or with an empty value, in " + pipeline.NoGroup + "). Per group and operand it counts the nodes\n" +
			"where the operand is asked (deploy label \"true\"), running (a Running pod of its DaemonSet), missing\n" +
			"(asked and not running: audit's MISSING), paused (a helper's pause value) and disabled (switched off\n" +
			"in the ClusterPolicy, deploy label \"false\", or the node's nvidia.com/gpu.deploy.operands=false); per\n" +
			"start-up rule of order-check --all-rules, the nodes that break it. Then every node with a finding\n" +
			"(missing, stuck past --stuck-after, or a broken rule), each with its reason as audit --explain gives\n" +
			"it. Per group too: its GPU nodes ready and unusable, with the top root causes (as gpuops health),\n" +
			"and while a driver upgrade is under way or in trouble its nodes by verdict, then the fleet's\n" +
			"rollout counts and budget (as gpuops upgrades).\n" +
			"Exit 1 if any node has a finding.",
		Flags: append([]cli.Flag{o.Flag()}, o.FleetFlags()...),
	}, o)
}
