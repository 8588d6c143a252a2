package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/outcome"
)

// View is which command's view of a result a printer prints.
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

// commands are the commands of the views, as their JUnit documents are
// named ("gpuops audit").
var commands = [...]string{AuditView: "audit", OrderView: "order-check", MatrixView: "matrix", SummaryView: "summary",
	HealthView: "health", UpgradesView: "upgrades"}

// values are what a command says of one cluster's result, one method per
// kind of value its formats are made of. The Printer renders them in any
// format, and composes those of many clusters: it never reads back what
// it printed.
type values interface {
	lines() []string          // text: the lab's exact lines
	blocks(wide bool) []block // table and wide: the tables, and the lines beside them
	data(*Origin) any         // JSON and YAML: one object, with its origin in a run across clusters
}

// named are the values that print kubectl's -o name: the nodes with a
// finding.
type named interface{ names() []string }

// checked are the values that print JUnit: a test case per check.
type checked interface{ cases() []junitCase }

// Origin says whose a view's data is in a run across clusters. Each view's
// data embeds it first, so that its fields lead each cluster's entry; alone
// it is nil, and encoding/json skips it.
type Origin struct {
	Context string `json:"context"`
	Server  string `json:"server"`
	Error   string `json:"error,omitempty"` // why the cluster could not be judged; then it is the entry
}

// of is the view of a result; order-check's refuses a result without the
// node it judges.
func (v View) of(r *outcome.Result) (values, error) {
	switch v {
	case OrderView:
		n, err := r.Verdict(r.Node)
		if err != nil {
			return nil, err
		}
		return orderView{n}, nil
	case MatrixView:
		return matrixView{r}, nil
	case SummaryView:
		return summaryView{*r.Fleet, r.Capacity}, nil
	case HealthView:
		return healthView{r}, nil
	case UpgradesView:
		return upgradesView{r}, nil
	}
	return auditView{r}, nil
}

// Result prints one view of a result in the printer's format, and its
// notes on notes: audit's lines (with their reasons when explained),
// order-check's verdict of the one node judged, the matrix, the fleet
// summary, each node's health or the driver rollout.
func (p Printer) Result(w, notes io.Writer, r *outcome.Result, view View) error {
	p.Notes(notes, r)
	v, err := view.of(r)
	if err != nil {
		return err
	}
	switch p.Format {
	case JSON, YAML:
		return p.data(w, v.data(nil))
	case Table, Wide:
		return p.tables(w, v.blocks(p.Format == Wide))
	case JUnit:
		c, err := casesOf(v, view)
		if err != nil {
			return err
		}
		return writeSuites(w, view, suite(junitName(view), c))
	case Name:
		n, err := namesOf(v, view)
		if err != nil {
			return err
		}
		return writeLines(w, nodeNames(n))
	case OpenReports:
		return PrintReports(w, reports(r, ""))
	}
	return writeLines(w, v.lines())
}

// casesOf are the view's JUnit cases; an error for a view without them.
func casesOf(v values, view View) ([]junitCase, error) {
	if c, ok := v.(checked); ok {
		return c.cases(), nil
	}
	return nil, fmt.Errorf("%s prints no JUnit", commands[view])
}

// namesOf are the nodes of the view's -o name; an error for a view
// without it.
func namesOf(v values, view View) ([]string, error) {
	if n, ok := v.(named); ok {
		return n.names(), nil
	}
	return nil, fmt.Errorf("%s prints no -o name", commands[view])
}

// nodeNames are node/NAME of each node, as kubectl -o name prints them.
func nodeNames(nodes []string) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = "node/" + n
	}
	return out
}

// Notes prints on w (stderr) what the pipeline says about its read and its
// roster, and the operands the ClusterPolicy switches off, when the output
// is for a person who asked why (--explain) or reads a table; the data
// formats carry them in their own fields, and the lab's exact lines come
// alone.
func (p Printer) Notes(w io.Writer, r *outcome.Result) {
	_ = writeLines(w, p.notes(r)) // notes on stderr: nothing to do if it fails
}

// notes are the lines Notes prints.
func (p Printer) notes(r *outcome.Result) []string {
	if p.Format.Data() || p.Format == JUnit || p.Format == Name || p.Format == OpenReports {
		return nil
	}
	var out []string
	if r.Explain || p.Format == Table || p.Format == Wide {
		for _, n := range r.Notes {
			out = append(out, "note: "+n)
		}
		for _, d := range r.Disabled {
			out = append(out, fmt.Sprintf("note: %s is off (%s): it is never missing, and the rules count it as the hosts'", d.Operand, d.Reason))
		}
	}
	// Logs the user asked for and could not have: said however the result
	// is printed.
	for _, n := range r.LogNotes {
		out = append(out, "note: "+n)
	}
	return out
}

// writeNotes writes each note as a line "note: <note>" (the workload
// commands' notes, on stderr while their answers go to stdout).
func writeNotes(w io.Writer, notes []string) error {
	lines := make([]string, len(notes))
	for i, n := range notes {
		lines[i] = "note: " + n
	}
	return writeLines(w, lines)
}

// writeLines writes each line and a newline.
func writeLines(w io.Writer, lines []string) error {
	_, err := io.WriteString(w, text(lines))
	return err
}

// text is each line and a newline.
func text(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}
