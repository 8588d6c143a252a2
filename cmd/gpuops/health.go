package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

type healthOptions struct {
	*judgeOptions
	nodes []string
}

func healthCommand(e cliopts.Env) *cli.Command {
	o := &healthOptions{judgeOptions: newJudge(e, cliopts.JudgeOutput(report.JUnit, report.OpenReports), report.HealthView, (*outcome.Result).Unusable)}
	return command(&cli.Command{
		Name:  "health",
		Usage: "can each GPU node run GPU work? the root cause along the operator's start-up chain, and what it blocks",
		Description: "For every GPU node (nvidia.com/gpu.present=true or a deploy label; others are not judged), in\n" +
			"natural name order: \"<node> READY\", or \"<node> UNUSABLE <code> <operand>\" for the root cause, the\n" +
			"earliest link of the chain driver -> container toolkit -> validator -> device plugin, GFD, DCGM,\n" +
			"exporter, MIG manager (the DRA and sandbox stacks likewise) that is not healthy, then \"blocks\"\n" +
			"and the operands waiting behind it. Codes: missing, not-running, container-waiting, crash-loop,\n" +
			"init-waiting, not-ready, paused, stuck (a pause older than --stuck-after), upgrade-failed and\n" +
			"upgrade-stuck (the driver's upgrade, see gpuops upgrades), order, node-not-ready,\n" +
			"gpus-not-advertised (device plugin ready, nothing allocatable), gpus-unhealthy (allocatable below\n" +
			"capacity or GFD's count, or pods refused at admission as the device plugin fails to allocate); what a node was asked to offer against what it offers: sharing-config-unknown,\n" +
			"sharing-not-applied and mps-daemon-not-ready (the device plugin's time-slicing or MPS config),\n" +
			"mig-config-unknown, mig-failed, mig-stuck and mig-layout-mismatch (the MIG manager's layout), and on\n" +
			"the DRA stack devices-not-published, pool-incomplete and devices-tainted (the kubelet plugin's\n" +
			"ResourceSlices); runtime-not-configured (the container toolkit: the runtime has no \"nvidia\"\n" +
			"runtime, the operands' pods get no sandbox). A link the host provides or the ClusterPolicy switches\n" +
			"off is healthy. A node whose validator's workload pod was refused a GPU because the pods on it hold\n" +
			"them all is full, not broken: \"<node> READY note gpus-all-in-use operator-validator\". A driver pod\n" +
			"waiting in k8s-driver-manager, which said the host has a driver (its termination message or an\n" +
			"Event; its log with --logs), is not the node's fault: \"<node> READY note driver-on-host driver\".\n" +
			"--explain adds the evidence: container, reason, restarts, for how long, the termination message\n" +
			"and the pod's Warning Events (read always: one LIST of the namespace's). --logs reads the failing\n" +
			"containers' logs and adds \"hint <code>\" when a line names the host's fault. NODE... judges those\n" +
			"nodes only (one that does not exist is an error, exit 2). Exit 1 if any GPU node is unusable.",
		Flags: append(o.NodeFlags(&o.Output), o.LogsFlag()),
	}, o)
}

func (o *healthOptions) forms() []kubectlcli.Form {
	return []kubectlcli.Form{{Args: []kubectlcli.Arg{{Kind: nodeArg, Many: true}}}}
}

func (o *healthOptions) Complete(c *cli.Context) error {
	o.nodes = c.Args().Slice()
	o.also = func(p *pipeline.Options) { p.Health, p.Nodes = true, o.nodes }
	return o.judgeOptions.Complete(c)
}

func (o *healthOptions) Validate() error {
	if err := o.judgeOptions.Validate(); err != nil {
		return err
	}
	for _, n := range o.nodes {
		if err := cliopts.CheckNodeName(n); err != nil {
			return err
		}
	}
	return nil
}
