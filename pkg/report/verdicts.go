package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
)

// Order prints the order verdict of one node: in text the lab's one word;
// wide is the table with what each broken rule means there; name is the
// node if it breaks a rule.
func (p Printer) Order(w io.Writer, v judge.OrderVerdict) error {
	switch {
	case p.Format.Data():
		return p.data(w, struct {
			judge.OrderVerdict
			OK      bool   `json:"ok"`
			Verdict string `json:"verdict"`
		}{v, v.OK(), v.String()})
	case p.Format == JUnit:
		return orderJUnit(w, v)
	case p.Format == Name:
		if v.OK() {
			return nil
		}
		return names(w, []string{v.Node})
	case p.Format == Table || p.Format == Wide:
		verdict := cell{"ok", green}
		if !v.OK() {
			verdict = cell{strings.Join(v.Findings, ","), red}
		}
		t := table{header: []string{"NODE", "VERDICT"}, rows: [][]cell{{{text: v.Node}, verdict}}}
		if p.Format == Wide {
			var why []string
			for _, r := range v.Rules {
				if slices.Contains(v.Findings, r.Finding) {
					why = append(why, explain.Order(r).Message)
				}
			}
			t.header = append(t.header, "WHY")
			t.rows[0] = append(t.rows[0], cell{text: strings.Join(why, "; ")})
		}
		return p.table(w, t)
	}
	_, err := fmt.Fprintln(w, v.String())
	return err
}

// Matrix prints the node × operand matrix: in text the lab's
// "<node> <column>=yes|no ..." lines and TOTAL_PODS.
func (p Printer) Matrix(w io.Writer, m judge.Matrix) error {
	switch {
	case p.Format.Data():
		m.Rows = nonNil(m.Rows)
		return p.data(w, m)
	case p.Format == Table:
		t := table{header: []string{"NODE"}}
		for _, c := range m.Columns {
			t.header = append(t.header, strings.ToUpper(c))
		}
		for _, r := range m.Rows {
			row := []cell{{text: r.Node}}
			for _, c := range m.Columns {
				if r.Present[c] {
					row = append(row, cell{"yes", green})
				} else {
					row = append(row, cell{"no", faint})
				}
			}
			t.rows = append(t.rows, row)
		}
		if err := p.table(w, t); err != nil || p.NoHeaders {
			return err
		}
		_, err := fmt.Fprintf(w, "\nRunning DaemonSet pods in the namespace: %d\n", m.TotalPods)
		return err
	}
	var b strings.Builder
	for _, r := range m.Rows {
		b.WriteString(r.Node)
		for _, c := range m.Columns {
			fmt.Fprintf(&b, " %s=%s", c, yesNo(r.Present[c]))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "TOTAL_PODS=%d\n", m.TotalPods)
	_, err := io.WriteString(w, b.String())
	return err
}
