package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

func auditCommand(e cliopts.Env) *cli.Command {
	o := newJudge(e, cliopts.JudgeOutput(report.Wide, report.Name, report.JUnit, report.OpenReports), report.AuditView, (*outcome.Result).AuditFailed)
	return command(&cli.Command{
		Name:  "audit",
		Usage: "is every operand a node asks for (deploy label exactly \"true\") Running there?",
		Description: "For every node, in natural name order: \"<node> MISSING <operand>\" per missing operand,\n" +
			"or \"<node> OK\" (the lab's operand-audit.sh, same output). A pod counts when its operand's\n" +
			"DaemonSet controls it, it is Running and not being deleted. An operand the ClusterPolicy switches\n" +
			"off is never missing. \"<node> STUCK <operand>\" is a helper's pause older than --stuck-after.\n" +
			"Exit 1 if anything is missing or stuck (UNEXPECTED pods and WARNINGs of --explain inform, they\n" +
			"do not change the exit code).",
		Flags: o.NodeFlags(&o.Output),
	}, o)
}
