package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
)

// Audit prints the audit of every node. With why (audit --explain), the
// reasons of each MISSING, the unexpected pods and the label-value warnings
// come with it: in text appended to the lab's lines, so the third field is
// still the operand; in JSON and YAML beside the plain audit's fields, so a
// program reading those keeps working; in JUnit as each failure's text; in
// a table (and wide, which is that table) as a row each. Name is the nodes
// with something missing or stuck.
func (p Printer) Audit(w io.Writer, audits []judge.NodeAudit, why *explain.Report) error {
	if p.Format.Data() {
		v := struct {
			OK    bool              `json:"ok"`
			Nodes []judge.NodeAudit `json:"nodes"`
			*explain.Report
		}{!judge.AuditFailed(audits), nonNil(audits), why}
		return p.data(w, v)
	}
	x := indexWhy(why)
	if p.Format == JUnit {
		return auditJUnit(w, audits, x)
	}
	switch p.Format {
	case Table, Wide:
		return p.table(w, auditTable(audits, x))
	case Name:
		var failed []string
		for _, a := range audits {
			if !a.OK() {
				failed = append(failed, a.Node)
			}
		}
		return names(w, failed)
	}
	var b strings.Builder
	for _, a := range audits {
		if a.OK() {
			fmt.Fprintf(&b, "%s OK\n", a.Node)
		}
		for _, op := range a.Missing {
			fmt.Fprintf(&b, "%s MISSING %s", a.Node, op)
			if msgs := x.reasons(a.Node, op); len(msgs) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(msgs, "; "))
			}
			b.WriteByte('\n')
		}
		for _, op := range a.Stuck {
			fmt.Fprintf(&b, "%s STUCK %s", a.Node, op)
			if msg, ok := x.stuck[[2]string{a.Node, op}]; ok {
				fmt.Fprintf(&b, " (%s)", msg)
			}
			b.WriteByte('\n')
		}
		for _, n := range x.notes[a.Node] {
			fmt.Fprintf(&b, "%s %s %s (%s)\n", a.Node, n.status, n.subject, n.message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// auditTable has one row per node with its missing (and, if any node has
// them, stuck) operands or, explained, one row per finding: OK, MISSING with
// its reasons, STUCK, UNEXPECTED, WARNING.
func auditTable(audits []judge.NodeAudit, x whyIndex) table {
	if x.report == nil {
		t := table{header: []string{"NODE", "STATUS", "MISSING"}}
		stuck := slices.ContainsFunc(audits, func(a judge.NodeAudit) bool { return len(a.Stuck) > 0 })
		if stuck {
			t.header = append(t.header, "STUCK")
		}
		for _, a := range audits {
			status := cell{"OK", green}
			switch {
			case len(a.Missing) > 0:
				status = cell{"MISSING", red}
			case len(a.Stuck) > 0:
				status = cell{"STUCK", red}
			}
			row := []cell{{text: a.Node}, status, {text: strings.Join(a.Missing, ",")}}
			if stuck {
				row = append(row, cell{text: strings.Join(a.Stuck, ",")})
			}
			t.rows = append(t.rows, row)
		}
		return t
	}
	t := table{header: []string{"NODE", "STATUS", "OPERAND", "WHY"}}
	for _, a := range audits {
		if a.OK() {
			t.rows = append(t.rows, []cell{{text: a.Node}, {"OK", green}, {}, {}})
		}
		for _, op := range a.Missing {
			t.rows = append(t.rows, []cell{{text: a.Node}, {"MISSING", red}, {text: op}, {text: strings.Join(x.reasons(a.Node, op), "; ")}})
		}
		for _, op := range a.Stuck {
			t.rows = append(t.rows, []cell{{text: a.Node}, {"STUCK", red}, {text: op}, {text: x.stuck[[2]string{a.Node, op}]}})
		}
		for _, n := range x.notes[a.Node] {
			t.rows = append(t.rows, []cell{{text: a.Node}, {n.status, n.color}, {text: n.subject}, {text: n.message}})
		}
	}
	return t
}

// whyIndex groups an explain.Report by node once, for printing node by node
// in the audit's order.
type whyIndex struct {
	report  *explain.Report
	missing map[[2]string][]explain.Reason // by node and operand
	stuck   map[[2]string]string           // why a pause is stuck, by node and operand
	notes   map[string][]note              // UNEXPECTED, then WARNING lines, by node
}

type note struct{ status, color, subject, message string }

func indexWhy(r *explain.Report) whyIndex {
	x := whyIndex{report: r, missing: map[[2]string][]explain.Reason{}, stuck: map[[2]string]string{}, notes: map[string][]note{}}
	if r == nil {
		return x
	}
	for _, m := range r.Missing {
		x.missing[[2]string{m.Node, m.Operand}] = m.Reasons
	}
	for _, u := range r.Unexpected {
		x.notes[u.Node] = append(x.notes[u.Node], note{"UNEXPECTED", red, u.Operand, u.Message})
	}
	for _, wa := range r.Warnings {
		if wa.Stuck { // said once, as STUCK
			x.stuck[[2]string{wa.Node, wa.Operand}] = wa.Message
			continue
		}
		x.notes[wa.Node] = append(x.notes[wa.Node], note{"WARNING", faint, wa.Label, wa.Message})
	}
	return x
}

func (x whyIndex) reasons(node, operand string) []string {
	rs := x.missing[[2]string{node, operand}]
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.Message
	}
	return msgs
}
