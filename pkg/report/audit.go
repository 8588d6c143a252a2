package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// auditView is audit of every node. Explained (audit --explain), the
// reasons of each MISSING, the unexpected pods and the label-value warnings
// come with it: in text appended to the lab's lines, so the third field is
// still the operand; in JSON and YAML beside the plain audit's fields, so a
// program reading those keeps working; in JUnit as each failure's text; in
// a table (and wide, which is that table) as a row each. Name is the nodes
// with something missing or stuck.
type auditView struct{ r *outcome.Result }

func (a auditView) lines() []string {
	var out []string
	for i := range a.r.Nodes {
		out = append(out, auditLines(&a.r.Nodes[i], a.r.Explain)...)
	}
	return out
}

// auditLines are a node's text lines: OK, or each MISSING and STUCK
// operand; explained, with their reasons, and the UNEXPECTED pods and
// label WARNINGs after them.
func auditLines(v *verdict.Verdict, explained bool) []string {
	var out []string
	if v.Audit.OK() {
		out = append(out, v.Node+" OK")
	}
	why := whyOf(v, explained)
	for _, op := range v.Audit.Missing {
		l := v.Node + " MISSING " + op
		if msgs := why.missing(op); len(msgs) > 0 {
			l += " (" + strings.Join(msgs, "; ") + ")"
		}
		out = append(out, l)
	}
	for _, op := range v.Audit.Stuck {
		l := v.Node + " STUCK " + op
		if msg, ok := why.stuck(op); ok {
			l += " (" + msg + ")"
		}
		out = append(out, l)
	}
	for _, n := range why.notes() {
		out = append(out, fmt.Sprintf("%s %s %s (%s)", v.Node, n.status, n.subject, n.message))
	}
	return out
}

// blocks are one table: a row per node with its missing (and, if any node
// has them, stuck) operands or, explained, a row per finding: OK, MISSING
// with its reasons, STUCK, UNEXPECTED, WARNING.
func (a auditView) blocks(bool) []block {
	nodes := a.r.Nodes
	if !a.r.Explain {
		t := table{header: []string{"NODE", "STATUS", "MISSING"}}
		stuck := slices.ContainsFunc(nodes, func(v verdict.Verdict) bool { return len(v.Audit.Stuck) > 0 })
		if stuck {
			t.header = append(t.header, "STUCK")
		}
		for _, v := range nodes {
			status := cell{"OK", green}
			switch {
			case len(v.Audit.Missing) > 0:
				status = cell{"MISSING", red}
			case len(v.Audit.Stuck) > 0:
				status = cell{"STUCK", red}
			}
			row := []cell{{text: v.Node}, status, {text: strings.Join(v.Audit.Missing, ",")}}
			if stuck {
				row = append(row, cell{text: strings.Join(v.Audit.Stuck, ",")})
			}
			t.rows = append(t.rows, row)
		}
		return []block{{table: &t}}
	}
	t := table{header: []string{"NODE", "STATUS", "OPERAND", "WHY"}}
	for i := range nodes {
		v := &nodes[i]
		why := whyOf(v, true)
		if v.Audit.OK() {
			t.rows = append(t.rows, []cell{{text: v.Node}, {"OK", green}, {}, {}})
		}
		for _, op := range v.Audit.Missing {
			t.rows = append(t.rows, []cell{{text: v.Node}, {"MISSING", red}, {text: op}, {text: strings.Join(why.missing(op), "; ")}})
		}
		for _, op := range v.Audit.Stuck {
			msg, _ := why.stuck(op)
			t.rows = append(t.rows, []cell{{text: v.Node}, {"STUCK", red}, {text: op}, {text: msg}})
		}
		for _, n := range why.notes() {
			t.rows = append(t.rows, []cell{{text: v.Node}, {n.status, n.color}, {text: n.subject}, {text: n.message}})
		}
	}
	return []block{{table: &t}}
}

// data is the audit of every node and, explained, the reasons of all of
// them together, as explain gives them.
func (a auditView) data(o *Origin) any {
	audits := make([]judge.NodeAudit, len(a.r.Nodes))
	var why *explain.Report
	if a.r.Explain {
		all := explain.Empty()
		all.Disabled, all.Notes = a.r.Disabled, nonNil(a.r.Notes)
		why = &all
	}
	for i, v := range a.r.Nodes {
		audits[i] = v.Audit
		if why != nil {
			why.Missing = append(why.Missing, v.Why().Missing...)
			why.Warnings = append(why.Warnings, v.Why().Warnings...)
			why.Unexpected = append(why.Unexpected, v.Why().Unexpected...)
		}
	}
	return struct {
		*Origin
		Operator *outcome.Operator `json:"operator,omitempty"`
		OK       bool              `json:"ok"`
		Nodes    []judge.NodeAudit `json:"nodes"`
		*explain.Report
	}{o, a.r.Operator, !a.r.AuditFailed(), audits, why}
}

func (a auditView) names() []string {
	var out []string
	for _, v := range a.r.Nodes {
		if !v.Audit.OK() {
			out = append(out, v.Node)
		}
	}
	return out
}

// cases are one per node and operand it asks for, a MISSING one failing
// with its reasons, one per line; and a failing case per operand a helper
// has paused there past --stuck-after.
func (a auditView) cases() []junitCase {
	var out []junitCase
	for i := range a.r.Nodes {
		v := &a.r.Nodes[i]
		why := whyOf(v, a.r.Explain)
		for _, op := range v.Audit.Asked {
			c := junitCase{Name: op, Classname: v.Node, Time: noTime}
			if slices.Contains(v.Audit.Missing, op) {
				c.Failure = &junitFailure{Type: "missing", Message: "MISSING " + op, Text: strings.Join(why.missing(op), "\n")}
			}
			out = append(out, c)
		}
		for _, op := range v.Audit.Stuck {
			msg, _ := why.stuck(op)
			out = append(out, junitCase{Name: op, Classname: v.Node, Time: noTime,
				Failure: &junitFailure{Type: "stuck", Message: "STUCK " + op, Text: msg}})
		}
	}
	return out
}

// nodeWhy are the reasons of one node's audit; none unless explained.
type nodeWhy struct{ explain.Report }

func whyOf(v *verdict.Verdict, explained bool) nodeWhy {
	if !explained {
		return nodeWhy{}
	}
	return nodeWhy{v.Why()}
}

// missing are the messages of why an operand is MISSING.
func (w nodeWhy) missing(op string) []string {
	var out []string
	for _, m := range w.Missing {
		if m.Operand == op {
			for _, r := range m.Reasons {
				out = append(out, r.Message)
			}
		}
	}
	return out
}

// stuck is why a helper's pause of the operand is stuck.
func (w nodeWhy) stuck(op string) (string, bool) {
	for _, wa := range w.Warnings {
		if wa.Stuck && wa.Operand == op {
			return wa.Message, true
		}
	}
	return "", false
}

type note struct{ status, color, subject, message string }

// notes are the UNEXPECTED pods, then the label WARNINGs but the stuck
// pauses (said once, as STUCK).
func (w nodeWhy) notes() []note {
	var out []note
	for _, u := range w.Unexpected {
		out = append(out, note{"UNEXPECTED", red, u.Operand, u.Message})
	}
	for _, wa := range w.Warnings {
		if !wa.Stuck {
			out = append(out, note{"WARNING", faint, wa.Label, wa.Message})
		}
	}
	return out
}
