package report

import (
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
)

// ExplainedAudit prints the audit with why: the reasons of each MISSING,
// the unexpected pods and the label-value warnings. JSON adds them beside
// the plain audit's fields, so a program reading those keeps working.
func (p Printer) ExplainedAudit(w io.Writer, audits []judge.NodeAudit, r explain.Report) error {
	switch p.Format {
	case JSON:
		return writeJSON(w, struct {
			OK    bool              `json:"ok"`
			Nodes []judge.NodeAudit `json:"nodes"`
			explain.Report
		}{!judge.AuditFailed(audits), nonNil(audits), r})
	case Table:
		return explainedTable(audits, r).write(w, p.Color)
	}
	return explain.WriteAudit(w, audits, r)
}

// explainedTable has one row per finding, node by node: OK, MISSING with its
// reasons, UNEXPECTED, WARNING.
func explainedTable(audits []judge.NodeAudit, r explain.Report) table {
	t := table{header: []string{"NODE", "STATUS", "OPERAND", "WHY"}}
	missing := map[[2]string][]explain.Reason{}
	for _, m := range r.Missing {
		missing[[2]string{m.Node, m.Operand}] = m.Reasons
	}
	others := map[string][][]cell{} // unexpected pods and warnings by node
	for _, u := range r.Unexpected {
		others[u.Node] = append(others[u.Node], []cell{{text: u.Node}, {"UNEXPECTED", red}, {text: u.Operand}, {text: u.Message}})
	}
	for _, wa := range r.Warnings {
		others[wa.Node] = append(others[wa.Node], []cell{{text: wa.Node}, {"WARNING", faint}, {text: wa.Label}, {text: wa.Message}})
	}
	for _, a := range audits {
		if a.OK() {
			t.rows = append(t.rows, []cell{{text: a.Node}, {"OK", green}, {}, {}})
		}
		for _, op := range a.Missing {
			var why []string
			for _, rs := range missing[[2]string{a.Node, op}] {
				why = append(why, rs.Message)
			}
			t.rows = append(t.rows, []cell{{text: a.Node}, {"MISSING", red}, {text: op}, {text: strings.Join(why, "; ")}})
		}
		t.rows = append(t.rows, others[a.Node]...)
	}
	return t
}
