package main

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "is every operand a node asks for (deploy label exactly \"true\") Running there?",
		Description: "For every node, in natural name order: \"<node> MISSING <operand>\" per missing operand,\n" +
			"or \"<node> OK\" (the lab's operand-audit.sh, same output). A pod counts when its operand's\n" +
			"DaemonSet controls it, it is Running and not being deleted. Exit 1 if anything is missing.",
		Flags: []cli.Flag{outputFlag(), selectorFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError(errUnexpectedArgs(c))
			}
			p, err := printerFor(c)
			if err != nil {
				return err
			}
			opts, err := snapshotOptions(c)
			if err != nil {
				return err
			}
			s, err := readSnapshot(c, opts)
			if err != nil {
				return err
			}
			audits := judge.Audit(s, operand.Lab)
			if err := p.Audit(c.App.Writer, audits); err != nil {
				return err
			}
			if judge.AuditFailed(audits) {
				return errFinding
			}
			return nil
		},
	}
}
