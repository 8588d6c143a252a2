package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

func upgradesCommand(e cliopts.Env) *cli.Command {
	o := newJudge(e, cliopts.JudgeOutput(report.OpenReports), report.UpgradesView, (*outcome.Result).UpgradeFailed)
	o.also = func(p *pipeline.Options) { p.Upgrades = true }
	return command(&cli.Command{
		Name:  "upgrades",
		Usage: "the driver upgrade across the fleet: per node done, in progress, waiting for the budget, stuck, failed and why",
		Description: "Reads the rollout as the GPU Operator's upgrade controller sees it: each node's\n" +
			"nvidia.com/gpu-driver-upgrade-state and how long it has been in it, the upgrade policy (the\n" +
			"ClusterPolicy's spec.driver.upgradePolicy, or each NVIDIADriver's for its pool), the budget\n" +
			"(maxParallelUpgrades, maxUnavailable resolved to a number, and the nodes that use it: cordoned\n" +
			"or NotReady ones count too), the driver pods' revisions and restarts, the controller's events.\n" +
			"Prints the counts per verdict, the budget, then a line per node not done: done, in-progress,\n" +
			"waiting (for the budget: by whom), stuck (longer than --stuck-after in one state), failed (the\n" +
			"cause the controller would have), skipped, left-cordoned (done, cordoned by the controller),\n" +
			"outdated (the driver pod runs an older template and no upgrade is under way). Exit 1 if a node\n" +
			"is failed, stuck or left cordoned. --group-by counts the verdicts per value of a node label too.",
		Flags: append([]cli.Flag{o.Flag(), o.NoHeadersFlag(), o.GroupByFlag(""), o.Lab.JudgeFlag(), o.SelectorFlag(), o.DiscoverFlag(), o.StuckAfterFlag()}, o.SourceFlags()...),
	}, o)
}
