package gpuopstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// A recorded result is a Result judged on a real install (test/realinstall)
// and written to a file, so that a test renders it without a cluster
// (pkg/report's goldens of every view in every format). The file holds the
// Result as encoding/json writes it and, beside it, what that JSON leaves
// out and a view reads: each node's asked operands and judged rules (the
// JUnit checks) and its cells in the fleet's grid (the HTML page). A matrix
// row's presence, which JSON writes as a map, is made again over the
// roster's columns.
type recording struct {
	Result *outcome.Result           `json:"result"`
	Asked  map[string][]string       `json:"asked"` // by node
	Rules  map[string][]operand.Rule `json:"rules"` // by node
	Cells  map[string][]summary.Cell `json:"cells"` // by node of the fleet
}

// RecordResult writes r to path as a recorded result, each of names' keys
// replaced by its value (the test's namespace and ID), and fails unless
// the result, recorded and read back, renders in every view and format as
// r does (order-check's of node).
func RecordResult(t testing.TB, path string, r *outcome.Result, names Volatile, node string) {
	t.Helper()
	rec := recording{Result: r, Asked: map[string][]string{}, Rules: map[string][]operand.Rule{}, Cells: map[string][]summary.Cell{}}
	for _, v := range r.Nodes {
		rec.Asked[v.Node], rec.Rules[v.Node] = v.Audit.Asked, v.Order.Rules
	}
	if r.Fleet != nil {
		for _, n := range r.Fleet.Nodes {
			rec.Cells[n.Name] = n.Cells
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := shortLines(&pretty, b, ""); err != nil {
		t.Fatal(err)
	}
	b = pretty.Bytes()
	back := ReadResult(t, WriteFile(t, filepath.Join(t.TempDir(), "results.json"), string(b)))
	want, got := RenderViews(r, node), RenderViews(back, node)
	for i := range want {
		if want[i].Text != got[i].Text {
			t.Errorf("%s: the recorded result renders otherwise than the result: %s", want[i].Name, lineDiff(want[i].Text, got[i].Text))
		}
	}
	WriteFile(t, path, names.names(string(b))+"\n")
}

// lineWidth is how wide a value of a recorded result may be on one line.
const lineWidth = 160

// shortLines writes the JSON value raw indented, but each value that fits
// on one line at its indent on one line: a record a reader scans, a node a
// few lines.
func shortLines(w *bytes.Buffer, raw []byte, indent string) error {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return err
	}
	if len(indent)+compact.Len() <= lineWidth || (raw[0] != '{' && raw[0] != '[') {
		w.Write(compact.Bytes())
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	open, err := dec.Token()
	if err != nil {
		return err
	}
	w.WriteString(open.(json.Delim).String() + "\n")
	for i := 0; dec.More(); i++ {
		if i > 0 {
			w.WriteString(",\n")
		}
		w.WriteString(indent + " ")
		if open == json.Delim('{') {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := json.Marshal(key)
			w.Write(append(k, ": "...))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := shortLines(w, v, indent+" "); err != nil {
			return err
		}
	}
	w.WriteString("\n" + indent + map[json.Delim]string{'{': "}", '[': "]"}[open.(json.Delim)])
	return nil
}

// ReadResult reads a recorded result.
func ReadResult(t testing.TB, path string) *outcome.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec recording
	if err := json.Unmarshal(b, &rec); err != nil || rec.Result == nil {
		t.Fatalf("%s: not a recorded result: %v", path, err)
	}
	r := rec.Result
	var rows struct {
		Result struct {
			Nodes []struct {
				Row struct{ Present map[string]bool }
			}
		}
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, o := range r.Roster {
		columns = append(columns, o.Column)
	}
	for i := range r.Nodes {
		v := &r.Nodes[i]
		var present []string
		for c, ok := range rows.Result.Nodes[i].Row.Present {
			if ok {
				present = append(present, c)
			}
		}
		v.Row.Present = judge.NewPresent(columns, present...)
		v.Audit.Asked, v.Order.Rules = rec.Asked[v.Node], rec.Rules[v.Node]
	}
	if r.Fleet != nil {
		for i := range r.Fleet.Nodes {
			r.Fleet.Nodes[i].Cells = rec.Cells[r.Fleet.Nodes[i].Name]
		}
	}
	return r
}

// Rendered is what one view of a result prints in one format.
type Rendered struct {
	Name string // view.format, contexts.view.format for the run across clusters
	Text string // what it printed, then its notes, or the printer's error
}

// views are report's views by their commands' names.
var views = []struct {
	name string
	view report.View
}{
	{"audit", report.AuditView}, {"order-check", report.OrderView}, {"matrix", report.MatrixView},
	{"summary", report.SummaryView}, {"health", report.HealthView}, {"upgrades", report.UpgradesView},
}

// formats are every format a printer knows but OpenReports; a view that
// does not print one says so (its error is what renders). OpenReports are
// the result's, whichever the view: they render once.
var formats = []report.Format{report.Text, report.JSON, report.YAML, report.Table, report.Wide, report.Name, report.JUnit}

// downContext is a cluster that could not be judged, as a run across
// clusters meets one.
var downContext = outcome.Cluster{Context: "down", Server: "https://127.0.0.1:1",
	Err: errors.New(`list nodes: Get "https://127.0.0.1:1/api/v1/nodes?timeout=30s": dial tcp 127.0.0.1:1: connect: connection refused`)}

// RenderViews renders every view of r in every format, alone and in a run
// across two clusters (r's, as context east, and one that is down; YAML alone only), its
// OpenReports, watch's batches of it (every node, then the first deleted)
// and the HTML page of each; order-check's view is of node.
func RenderViews(r *outcome.Result, node string) []Rendered {
	src := report.Source{Context: "east", Server: "https://east.example:6443", Namespace: r.Namespace, Selector: r.Selector, Taken: r.Taken}
	across := func(r *outcome.Result) []outcome.Cluster {
		return []outcome.Cluster{{Context: src.Context, Server: src.Server, Result: r}, downContext}
	}
	var out []Rendered
	render := func(name string, f func(w, notes *bytes.Buffer) error) {
		var w, notes bytes.Buffer
		err := f(&w, &notes)
		text := w.String() + "--- notes\n" + notes.String()
		if err != nil {
			text += "--- error\n" + err.Error() + "\n"
		}
		out = append(out, Rendered{Name: name, Text: text})
	}
	for _, v := range views {
		rv := *r
		if v.view == report.OrderView {
			rv.Node, rv.Named = node, true
		}
		clusters := across(&rv)
		for _, f := range formats {
			p := report.Printer{Format: f}
			render(fmt.Sprintf("%s.%s", v.name, f), func(w, notes *bytes.Buffer) error { return p.Result(w, notes, &rv, v.view) })
			if f == report.YAML {
				continue // across contexts, YAML is JSON's tree again; its encoding is checked alone above
			}
			render(fmt.Sprintf("contexts.%s.%s", v.name, f), func(w, notes *bytes.Buffer) error { return p.Clusters(w, notes, clusters, v.view) })
		}
	}
	reports := report.Printer{Format: report.OpenReports}
	render("openreports", func(w, notes *bytes.Buffer) error { return reports.Result(w, notes, r, report.AuditView) })
	render("contexts.openreports", func(w, notes *bytes.Buffer) error {
		return reports.Clusters(w, notes, across(r), report.AuditView)
	})
	watch := []verdict.Batch{{Time: r.Taken, Initial: true, Judged: len(r.Nodes), Roster: r.Roster}}
	for i := range r.Nodes {
		watch[0].Changes = append(watch[0].Changes, verdict.Change{After: &r.Nodes[i]})
	}
	if len(r.Nodes) > 0 { // then the first node is deleted
		watch = append(watch, verdict.Batch{Time: r.Taken.Add(time.Second), Judged: 1, Roster: r.Roster,
			Changes: []verdict.Change{{Before: &r.Nodes[0]}}})
	}
	for _, f := range []report.Format{report.Text, report.Wide, report.JSON, report.YAML, report.Table} {
		render("watch."+string(f), func(w, _ *bytes.Buffer) error {
			x := report.Printer{Format: f}.Watch(w, r.Explain, false)
			for _, b := range watch {
				if err := x.Batch(b); err != nil {
					return err
				}
			}
			return nil
		})
	}
	render("report.html", func(w, _ *bytes.Buffer) error { return report.HTML(w, *r.Fleet, r.Capacity, src) })
	render("contexts.report.html", func(w, notes *bytes.Buffer) error {
		holds, err := report.ClustersHTML(w, across(r), report.Source{Namespace: r.Namespace, Selector: r.Selector})
		notes.WriteString(holds + "\n")
		return err
	})
	return out
}
