package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

func orderCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "order-check",
		Usage:     "is the device plugin running on NODE without the container toolkit?",
		ArgsUsage: "NODE",
		Description: "Prints \"device-plugin-without-toolkit\" (exit 1) when a device-plugin pod is present on\n" +
			"NODE and no container-toolkit pod is, \"ok\" (exit 0) otherwise (the lab's order-check.sh,\n" +
			"same output). A node that does not exist is an error (exit 2). With --all-rules, every\n" +
			"broken rule of the start-up order is a finding; the first is printed. -o junit has one test case\n" +
			"per rule judged, failed when broken. It reads NODE's labels and the pods bound to it, not the\n" +
			"fleet: as quick on 5,000 nodes as on 3.",
		Flags: append([]cli.Flag{outputFlag(report.Wide, report.Name, report.JUnit, report.OpenReports), noHeadersFlag(), judgeLabFlag(), allRulesFlag(), discoverFlag()}, clusters.Flags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError(fmt.Errorf("want exactly one NODE, got %d arguments", c.NArg()))
			}
			if err := checkNodeName(c.Args().First()); err != nil {
				return err
			}
			f, err := readJudgeFlags(c)
			if err != nil {
				return err
			}
			f.opts.Node = c.Args().First()
			return judgeAndReport(c, f, report.OrderView, (*outcome.Result).OrderFailed)
		},
	}
}
