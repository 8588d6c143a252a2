package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

func matrixCommand(e cliopts.Env) *cli.Command {
	o := newJudge(e, cliopts.JudgeOutput(), report.MatrixView, func(*outcome.Result) bool { return false })
	return command(&cli.Command{
		Name:  "matrix",
		Usage: "which operand is Running on which node",
		Description: "One line per node in natural name order, \"<node> driver=yes|no toolkit=... device-plugin=...\n" +
			"gfd=... dcgm=...\", then TOTAL_PODS=<n>: Running pods of any DaemonSet in the namespace\n" +
			"(the lab's out/matrix.txt).",
		Flags: append([]cli.Flag{o.Flag(), o.NoHeadersFlag(), o.Lab.JudgeFlag(), o.SelectorFlag(), o.DiscoverFlag()}, o.SourceFlags()...),
	}, o)
}
