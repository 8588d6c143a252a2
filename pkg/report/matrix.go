package report

import (
	"fmt"
	"strings"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/outcome"
)

// matrixView is the node × operand matrix: in text the lab's
// "<node> <column>=yes|no ..." lines and TOTAL_PODS.
type matrixView struct{ r *outcome.Result }

func (m matrixView) lines() []string {
	var out []string
	for _, v := range m.r.Nodes {
		var b strings.Builder
		b.WriteString(v.Node)
		for _, o := range m.r.Roster {
			fmt.Fprintf(&b, " %s=%s", o.Column, yesNo(v.Row.Present.Has(o.Column)))
		}
		out = append(out, b.String())
	}
	return append(out, fmt.Sprintf("TOTAL_PODS=%d", m.r.TotalPods))
}

// blocks are the table, then the pod count.
func (m matrixView) blocks(bool) []block {
	t := table{header: []string{"NODE"}}
	for _, o := range m.r.Roster {
		t.header = append(t.header, strings.ToUpper(o.Column))
	}
	for _, v := range m.r.Nodes {
		row := []cell{{text: v.Node}}
		for _, o := range m.r.Roster {
			if v.Row.Present.Has(o.Column) {
				row = append(row, cell{"yes", green})
			} else {
				row = append(row, cell{"no", faint})
			}
		}
		t.rows = append(t.rows, row)
	}
	return []block{{table: &t}, {lines: []string{fmt.Sprintf("Running DaemonSet pods in the namespace: %d", m.r.TotalPods)}}}
}

// data is the matrix: its columns, a row per node, the pod count.
func (m matrixView) data(o *Origin) any {
	mx := judge.Matrix{TotalPods: m.r.TotalPods, Rows: []judge.MatrixRow{}}
	for _, op := range m.r.Roster {
		mx.Columns = append(mx.Columns, op.Column)
	}
	for _, v := range m.r.Nodes {
		mx.Rows = append(mx.Rows, v.Row)
	}
	return struct {
		*Origin
		judge.Matrix
	}{o, mx}
}
