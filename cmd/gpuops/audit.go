package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "is every operand a node asks for (deploy label exactly \"true\") Running there?",
		Description: "For every node, in natural name order: \"<node> MISSING <operand>\" per missing operand,\n" +
			"or \"<node> OK\" (the lab's operand-audit.sh, same output). A pod counts when its operand's\n" +
			"DaemonSet controls it, it is Running and not being deleted. An operand the ClusterPolicy switches\n" +
			"off is never missing. \"<node> STUCK <operand>\" is a helper's pause older than --stuck-after.\n" +
			"Exit 1 if anything is missing or stuck (UNEXPECTED pods and WARNINGs of --explain inform, they\n" +
			"do not change the exit code).",
		Flags: append([]cli.Flag{outputFlag(report.Wide, report.Name, report.JUnit, report.OpenReports), noHeadersFlag(), judgeLabFlag(), selectorFlag(), explainFlag(), discoverFlag(), stuckAfterFlag()}, clusters.Flags()...),
		Action: func(c *cli.Context) error {
			f, err := readJudgeFlags(c)
			if err != nil {
				return err
			}
			return judgeAndReport(c, f, report.AuditView, (*outcome.Result).AuditFailed)
		},
	}
}
