package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

type orderCheckOptions struct {
	*judgeOptions
	args []string
}

func orderCheckCommand(e cliopts.Env) *cli.Command {
	o := &orderCheckOptions{judgeOptions: newJudge(e, cliopts.JudgeOutput(report.Wide, report.Name, report.JUnit, report.OpenReports), report.OrderView, (*outcome.Result).OrderFailed)}
	return command(&cli.Command{
		Name:  "order-check",
		Usage: "is the device plugin running on NODE without the container toolkit?",
		Description: "Prints \"device-plugin-without-toolkit\" (exit 1) when a device-plugin pod is present on\n" +
			"NODE and no container-toolkit pod is, \"ok\" (exit 0) otherwise (the lab's order-check.sh,\n" +
			"same output). A node that does not exist is an error (exit 2). With --all-rules, every\n" +
			"broken rule of the start-up order is a finding; the first is printed. -o junit has one test case\n" +
			"per rule judged, failed when broken. It reads NODE's labels and the pods bound to it, not the\n" +
			"fleet: as quick on 5,000 nodes as on 3.",
		Flags: append([]cli.Flag{o.Flag(), o.NoHeadersFlag(), o.Lab.JudgeFlag(), o.AllRulesFlag(), o.DiscoverFlag()}, o.SourceFlags()...),
	}, o)
}

func (o *orderCheckOptions) forms() []kubectlcli.Form { return args(nodeArg) }

func (o *orderCheckOptions) Complete(c *cli.Context) error {
	o.args = c.Args().Slice()
	o.also = func(p *pipeline.Options) {
		if len(o.args) == 1 { // else Validate refuses
			p.Node = o.args[0]
		}
	}
	return o.judgeOptions.Complete(c)
}

func (o *orderCheckOptions) Validate() error {
	if len(o.args) != 1 {
		return cliopts.UsageError(fmt.Errorf("want exactly one NODE, got %d arguments", len(o.args)))
	}
	if err := cliopts.CheckNodeName(o.args[0]); err != nil {
		return err
	}
	return o.judgeOptions.Validate()
}
