package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

func matrixCommand() *cli.Command {
	return &cli.Command{
		Name:  "matrix",
		Usage: "which operand is Running on which node",
		Description: "One line per node in natural name order, \"<node> driver=yes|no toolkit=... device-plugin=...\n" +
			"gfd=... dcgm=...\", then TOTAL_PODS=<n>: Running pods of any DaemonSet in the namespace\n" +
			"(the lab's out/matrix.txt).",
		Flags: append([]cli.Flag{outputFlag(), noHeadersFlag(), judgeLabFlag(), selectorFlag(), discoverFlag()}, clusters.Flags()...),
		Action: func(c *cli.Context) error {
			f, err := readJudgeFlags(c)
			if err != nil {
				return err
			}
			return judgeAndReport(c, f, report.MatrixView, func(*outcome.Result) bool { return false })
		},
	}
}
