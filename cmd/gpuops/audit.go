package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/report"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "is every operand a node asks for (deploy label exactly \"true\") Running there?",
		Description: "For every node, in natural name order: \"<node> MISSING <operand>\" per missing operand,\n" +
			"or \"<node> OK\" (the lab's operand-audit.sh, same output). A pod counts when its operand's\n" +
			"DaemonSet controls it, it is Running and not being deleted. Exit 1 if anything is missing\n" +
			"(UNEXPECTED pods and WARNINGs of --explain inform, they do not change the exit code).",
		Flags: []cli.Flag{outputFlag(report.JUnit), judgeLabFlag(), selectorFlag(), explainFlag(), discoverFlag()},
		Action: func(c *cli.Context) error {
			p, opts, err := judgeInput(c)
			if err != nil {
				return err
			}
			explained := c.Bool("explain") || p.Format.Explained()
			opts.DaemonSets = explained || c.Bool("discover")
			s, err := readSnapshot(c, opts)
			if err != nil {
				return err
			}
			ops := roster(c, s)
			audits := judge.Audit(s, ops)
			var why *explain.Report
			if explained {
				r := explain.Explain(s, ops, audits)
				why = &r
			}
			if err := p.Audit(c.App.Writer, audits, why); err != nil {
				return err
			}
			if judge.AuditFailed(audits) {
				return errFinding
			}
			return nil
		},
	}
}
