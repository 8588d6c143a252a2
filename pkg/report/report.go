// Package report prints verdicts of the judge in the format a user asks for:
// the lab's exact text (what out/*.txt hold and scripts compare), JSON for
// programs, or an aligned table for people, coloured on a terminal.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/gpuops/gpuops/pkg/judge"
)

// Format is an output format.
type Format string

// The output formats.
const (
	Text  Format = "text"
	JSON  Format = "json"
	Table Format = "table"
)

// Formats lists the formats, the default first.
var Formats = []Format{Text, JSON, Table}

// ParseFormat validates a format name.
func ParseFormat(s string) (Format, error) {
	if f := Format(s); slices.Contains(Formats, f) {
		return f, nil
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown output format %q (want %s)", s, strings.Join(names, ", "))
}

// ColorFor reports whether output to w may be coloured: w is a terminal and
// NO_COLOR (https://no-color.org) is unset or empty.
func ColorFor(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// Printer writes verdicts in one format.
type Printer struct {
	Format Format
	Color  bool // colour table cells; only the table format has colour
}

// Audit prints the audit of every node.
func (p Printer) Audit(w io.Writer, audits []judge.NodeAudit) error {
	switch p.Format {
	case JSON:
		return writeJSON(w, struct {
			OK    bool              `json:"ok"`
			Nodes []judge.NodeAudit `json:"nodes"`
		}{!judge.AuditFailed(audits), nonNil(audits)})
	case Table:
		t := table{header: []string{"NODE", "STATUS", "MISSING"}}
		for _, a := range audits {
			status := cell{"OK", green}
			if !a.OK() {
				status = cell{"MISSING", red}
			}
			t.rows = append(t.rows, []cell{{text: a.Node}, status, {text: strings.Join(a.Missing, ",")}})
		}
		return t.write(w, p.Color)
	}
	return judge.WriteAudit(w, audits)
}

// Order prints the order verdict of one node.
func (p Printer) Order(w io.Writer, v judge.OrderVerdict) error {
	switch p.Format {
	case JSON:
		return writeJSON(w, struct {
			judge.OrderVerdict
			OK      bool   `json:"ok"`
			Verdict string `json:"verdict"`
		}{v, v.OK(), v.String()})
	case Table:
		verdict := cell{"ok", green}
		if !v.OK() {
			verdict = cell{strings.Join(v.Findings, ","), red}
		}
		t := table{header: []string{"NODE", "VERDICT"}, rows: [][]cell{{{text: v.Node}, verdict}}}
		return t.write(w, p.Color)
	}
	_, err := fmt.Fprintln(w, v.String())
	return err
}

// Matrix prints the node × operand matrix.
func (p Printer) Matrix(w io.Writer, m judge.Matrix) error {
	switch p.Format {
	case JSON:
		m.Rows = nonNil(m.Rows)
		return writeJSON(w, m)
	case Table:
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
		if err := t.write(w, p.Color); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "\nRunning DaemonSet pods in the namespace: %d\n", m.TotalPods)
		return err
	}
	return m.WriteText(w)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
