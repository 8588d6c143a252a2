package report

import (
	"fmt"
	"io"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/outcome"
)

// Notes prints on w (stderr) what the pipeline says about its read and its
// roster, and the operands the ClusterPolicy switches off, when the output
// is for a person who asked why (--explain) or reads a table; the data
// formats carry them in their own fields, and the lab's exact lines come
// alone.
func (p Printer) Notes(w io.Writer, r *outcome.Result) {
	if p.Format.Data() || p.Format == JUnit || p.Format == Name || p.Format == OpenReports || !(r.Explain || p.Format == Table || p.Format == Wide) {
		return
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	for _, d := range r.Disabled {
		fmt.Fprintf(w, "note: %s is off (%s): it is never missing, and the rules count it as the hosts'\n", d.Operand, d.Reason)
	}
}

// Result prints what a judge says of the result, in the printer's format,
// its notes on notes: audit's lines (with their reasons when explained),
// order-check's verdict of the one node judged, the matrix, the fleet
// summary, each node's health or the driver rollout.
func (p Printer) Result(w, notes io.Writer, r *outcome.Result, view View) error {
	p.Notes(notes, r)
	if p.Format == OpenReports {
		return p.openReports(w, r, view)
	}
	switch view {
	case OrderView:
		v, err := r.Verdict(r.Node)
		if err != nil {
			return err
		}
		return p.Order(w, v.Order)
	case MatrixView:
		return p.Matrix(w, matrixOf(r))
	case SummaryView:
		return p.Summary(w, *r.Fleet)
	case HealthView:
		return p.Health(w, r.Nodes, r.Explain)
	case UpgradesView:
		return p.Upgrades(w, r.Rollout, groupedOf(r.Fleet))
	}
	return p.Audit(w, audits(r), why(r))
}

// View is which judge's verdict a Result prints.
type View int

// The views of a result.
const (
	AuditView View = iota
	OrderView
	MatrixView
	SummaryView
	HealthView
	UpgradesView
)

// audits are the audit verdicts, node by node.
func audits(r *outcome.Result) []judge.NodeAudit {
	out := make([]judge.NodeAudit, len(r.Nodes))
	for i, v := range r.Nodes {
		out[i] = v.Audit
	}
	return out
}

// matrixOf is the node × operand table.
func matrixOf(r *outcome.Result) judge.Matrix {
	m := judge.Matrix{TotalPods: r.TotalPods}
	for _, o := range r.Roster {
		m.Columns = append(m.Columns, o.Column)
	}
	for _, v := range r.Nodes {
		m.Rows = append(m.Rows, v.Row)
	}
	return m
}

// why is the reasons of every node together, as audit --explain prints
// them; nil unless the result is explained.
func why(r *outcome.Result) *explain.Report {
	if !r.Explain {
		return nil
	}
	x := &explain.Report{Missing: []explain.Missing{}, Warnings: []explain.Warning{}, Unexpected: []explain.Unexpected{}, Disabled: r.Disabled, Notes: nonNil(r.Notes)}
	for _, v := range r.Nodes {
		x.Missing = append(x.Missing, v.Explain.Missing...)
		x.Warnings = append(x.Warnings, v.Explain.Warnings...)
		x.Unexpected = append(x.Unexpected, v.Explain.Unexpected...)
	}
	return x
}
