package report_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// The results the views are tested on, each made of the one judge's
// values a test gives, as the pipeline puts them together.

// alone is what p prints of one view of r, judged alone (its notes left
// out).
func alone(t *testing.T, p report.Printer, r *outcome.Result, view report.View) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Result(&b, io.Discard, r, view); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// audited is a result of these audits; with why, explained by it: each
// node carries its own part of the reasons.
func audited(audits []judge.NodeAudit, why *explain.Report) *outcome.Result {
	r := &outcome.Result{Explain: why != nil}
	for _, a := range audits {
		v := verdict.Verdict{Node: a.Node, Audit: a}
		if why != nil {
			v.Explain = &explain.Report{}
			r.Disabled, r.Notes = why.Disabled, why.Notes
			for _, m := range why.Missing {
				if m.Node == a.Node {
					v.Explain.Missing = append(v.Explain.Missing, m)
				}
			}
			for _, w := range why.Warnings {
				if w.Node == a.Node {
					v.Explain.Warnings = append(v.Explain.Warnings, w)
				}
			}
			for _, u := range why.Unexpected {
				if u.Node == a.Node {
					v.Explain.Unexpected = append(v.Explain.Unexpected, u)
				}
			}
		}
		r.Nodes = append(r.Nodes, v)
	}
	return r
}

// ordered is order-check's result of its one node.
func ordered(o judge.NodeOrder) *outcome.Result {
	return &outcome.Result{Node: o.Node, Named: true, Nodes: []verdict.Verdict{{Node: o.Node, Order: o}}}
}

// tabulated is a result whose matrix is m: the roster is its columns.
func tabulated(m judge.Matrix) *outcome.Result {
	r := &outcome.Result{TotalPods: m.TotalPods}
	for _, c := range m.Columns {
		r.Roster = append(r.Roster, operand.Operand{Name: c, Column: c})
	}
	for _, row := range m.Rows {
		r.Nodes = append(r.Nodes, verdict.Verdict{Node: row.Node, Row: row})
	}
	return r
}

// grouped is a result of the fleet, grouped.
func grouped(f summary.Fleet) *outcome.Result { return &outcome.Result{Fleet: &f} }

// rolledOut is a result of the rollout, grouped as f when not nil.
func rolledOut(ro *upgrade.Rollout, f *summary.Fleet) *outcome.Result {
	return &outcome.Result{Rollout: ro, Fleet: f}
}
