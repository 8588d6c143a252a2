package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/judge"
)

func matrixCommand() *cli.Command {
	return &cli.Command{
		Name:  "matrix",
		Usage: "which operand is Running on which node",
		Description: "One line per node in natural name order, \"<node> driver=yes|no toolkit=... device-plugin=...\n" +
			"gfd=... dcgm=...\", then TOTAL_PODS=<n>: Running pods of any DaemonSet in the namespace\n" +
			"(the lab's out/matrix.txt).",
		Flags: []cli.Flag{outputFlag(), noHeadersFlag(), judgeLabFlag(), selectorFlag(), discoverFlag()},
		Action: func(c *cli.Context) error {
			p, opts, err := judgeInput(c)
			if err != nil {
				return err
			}
			opts.DeployLabelsOnly = true // a row is its node's name; the columns come from pods
			rosterOptions(c, &opts)
			s, err := readSnapshot(c, opts)
			if err != nil {
				return err
			}
			return p.Matrix(c.App.Writer, judge.BuildMatrix(s, roster(c, s).Roster))
		},
	}
}
