package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
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
		Flags: []cli.Flag{outputFlag(report.Wide, report.Name, report.JUnit), noHeadersFlag(), judgeLabFlag(), selectorFlag(), explainFlag(), discoverFlag(), stuckAfterFlag()},
		Action: func(c *cli.Context) error {
			p, opts, err := judgeInput(c)
			if err != nil {
				return err
			}
			// -o wide is the table of --explain.
			explained := c.Bool("explain") || p.Format.Explained() || p.Format == report.Wide
			opts.DaemonSets = explained
			opts.DeployLabelsOnly = !explained // the audit reads deploy labels; only the reasons read taints, conditions and other labels
			opts.Trace = operand.Paused
			rosterOptions(c, &opts)
			s, err := readSnapshot(c, opts)
			if err != nil {
				return err
			}
			r := roster(c, s)
			audits := judge.Audit(s, r.Roster)
			clock := explain.Clock{Now: time.Now(), StuckAfter: c.Duration("stuck-after")}
			judge.Stuck(audits, s, r.Roster, clock.Now, clock.StuckAfter)
			var why *explain.Report
			if explained {
				x := explain.Explain(s, r.Roster, audits, clock)
				x.Notes = append(x.Notes, r.Notes...)
				if !p.Format.Data() {
					for _, n := range x.Notes {
						fmt.Fprintln(c.App.ErrWriter, "note: "+n)
					}
					for _, d := range x.Disabled {
						fmt.Fprintf(c.App.ErrWriter, "note: %s is off (%s): it is never missing, and the rules count it as the hosts'\n", d.Operand, d.Reason)
					}
				}
				why = &x
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
