package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/summary"
)

// A run across clusters (--contexts, --all-contexts) prints each cluster as
// the command prints it alone, stamped with its kubeconfig context, the
// same way in every command. It composes the values of each cluster's view,
// never their printed bytes:
//
//   - text lines (and -o name's) start with "<context>: ";
//   - tables get a leading CONTEXT column, every cluster's rows in one table
//     (the lines beside them follow it, stamped as text);
//   - -o json|yaml is {"clusters":[{"context","server","error"?, …}]}, each
//     entry the fields the command prints alone (its data's Origin);
//   - -o junit is one testsuite per cluster, named by its context, the API
//     server as its hostname;
//   - summary adds the fleet's total by group, as the context "(fleet)" (in
//     JSON and YAML, "fleet").
//
// A cluster that could not be judged is an entry with its error in each.

// FleetContext stands for the whole fleet where summary prints its total
// beside the clusters.
const FleetContext = "(fleet)"

// contextColumn heads the column of a table's rows that says whose they are.
const contextColumn = "CONTEXT"

// judgedCluster is a cluster and its view; views is nil when it could not
// be judged.
type judgedCluster struct {
	outcome.Cluster
	view values
}

// Clusters prints each cluster's result in the printer's format, stamped
// with its context, in the order given; their notes go to notes, stamped
// too.
func (p Printer) Clusters(w, notes io.Writer, cs []outcome.Cluster, view View) error {
	if p.Format == OpenReports {
		return clustersReports(w, notes, cs, view)
	}
	parts := make([]judgedCluster, len(cs))
	var fleets []summary.Fleet
	for i, c := range cs {
		parts[i].Cluster = c
		if c.Err != nil {
			continue
		}
		v, err := view.of(c.Result)
		if err != nil {
			return fmt.Errorf("context %s: %w", c.Context, err)
		}
		parts[i].view = v
		_ = writeLines(notes, stamped(c.Context, p.notes(c.Result))) // notes on stderr: nothing to do if it fails
		if c.Result.Fleet != nil {
			fleets = append(fleets, *c.Result.Fleet)
		}
	}
	var total *fleetTotal
	if view == SummaryView && p.Format != Name {
		total = &fleetTotal{Fleet: summary.Total(fleets), Contexts: len(cs), Errors: len(cs) - len(fleets)}
	}
	switch p.Format {
	case JSON, YAML:
		return p.clustersData(w, parts, total)
	case JUnit:
		return clustersJUnit(w, parts, view)
	case Table, Wide:
		return p.clustersTables(w, parts, total)
	}
	var out []string
	for _, pt := range parts {
		switch {
		case pt.Err != nil:
			out = append(out, pt.errorLine())
		case p.Format == Name:
			n, err := namesOf(pt.view, view)
			if err != nil {
				return err
			}
			out = append(out, stamped(pt.Context, nodeNames(n))...)
		default:
			out = append(out, stamped(pt.Context, pt.view.lines())...)
		}
	}
	if total != nil {
		out = append(out, stamped(FleetContext, append([]string{total.line()}, summaryView{f: total.Fleet}.lines()...))...)
	}
	return writeLines(w, out)
}

// errorLine is the line of a cluster that could not be judged.
func (c judgedCluster) errorLine() string { return c.Context + ": error: " + c.ErrorLine() }

// stamped are the lines that are not blank, each after "<context>: ".
func stamped(context string, lines []string) []string {
	var out []string
	for _, l := range lines {
		for _, one := range strings.Split(l, "\n") {
			if strings.TrimSpace(one) != "" {
				out = append(out, context+": "+one)
			}
		}
	}
	return out
}

// fleetTotal is summary's total of the clusters judged.
type fleetTotal struct {
	summary.Fleet
	Contexts, Errors int
}

// line is the total's first line: how many clusters, how many nodes.
func (t fleetTotal) line() string {
	nodes, findings := 0, 0
	for _, g := range t.Groups {
		nodes, findings = nodes+g.Nodes, findings+g.Findings
	}
	return fmt.Sprintf("contexts=%d errors=%d nodes=%d with-findings=%d", t.Contexts, t.Errors, nodes, findings)
}

// clustersTables merges the tables of the same columns of every cluster
// into one, behind a CONTEXT column, in the order they first come; each
// cluster's lines beside its tables (matrix's pod count), its error, and
// summary's total line follow, stamped.
func (p Printer) clustersTables(w io.Writer, parts []judgedCluster, total *fleetTotal) error {
	var tables []*table
	byHeader := map[string]*table{}
	var rest []string
	add := func(context string, blocks []block) {
		for _, bl := range p.shown(blocks) {
			if bl.table == nil {
				rest = append(rest, stamped(context, bl.lines)...)
				continue
			}
			key := strings.Join(bl.table.header, "\x00")
			m := byHeader[key]
			if m == nil {
				m = &table{header: append([]string{contextColumn}, bl.table.header...)}
				byHeader[key] = m
				tables = append(tables, m)
			}
			for _, r := range bl.table.rows {
				m.rows = append(m.rows, append([]cell{{text: context}}, r...))
			}
		}
	}
	for _, pt := range parts {
		if pt.Err != nil {
			rest = append(rest, pt.errorLine())
			continue
		}
		add(pt.Context, pt.view.blocks(p.Format == Wide))
	}
	if total != nil {
		add(FleetContext, append([]block{{lines: []string{total.line()}}}, summaryView{f: total.Fleet}.blocks(false)...))
	}
	var b strings.Builder
	for i, m := range tables {
		if i > 0 {
			b.WriteString("\n")
		}
		m.write(&b, p.Color, !p.NoHeaders)
	}
	if len(rest) > 0 && len(tables) > 0 && !p.NoHeaders {
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return writeLines(w, rest)
}

// clustersData writes {"clusters":[…]}: each entry the context, the server,
// and the error or the fields the command prints alone; summary's total as
// "fleet".
func (p Printer) clustersData(w io.Writer, parts []judgedCluster, total *fleetTotal) error {
	doc := struct {
		Clusters []any      `json:"clusters"`
		Fleet    *fleetData `json:"fleet,omitempty"`
	}{Clusters: []any{}}
	for _, pt := range parts {
		o := &Origin{Context: pt.Context, Server: pt.Server}
		if pt.Err != nil {
			o.Error = pt.ErrorLine()
			doc.Clusters = append(doc.Clusters, struct{ *Origin }{o})
			continue
		}
		doc.Clusters = append(doc.Clusters, pt.view.data(o))
	}
	if total != nil {
		d := fleetData{Contexts: total.Contexts, Errors: total.Errors, GroupBy: total.GroupBy, Groups: nonNil(total.Groups)}
		for _, g := range total.Groups {
			d.Nodes, d.NodesWithFindings = d.Nodes+g.Nodes, d.NodesWithFindings+g.Findings
		}
		d.OK = d.Errors == 0 && d.NodesWithFindings == 0
		doc.Fleet = &d
	}
	return p.data(w, doc)
}

// fleetData is summary's total in JSON and YAML.
type fleetData struct {
	OK                bool            `json:"ok"` // every cluster judged, no node with a finding
	Contexts          int             `json:"contexts"`
	Errors            int             `json:"errors"` // contexts not judged
	Nodes             int             `json:"nodes"`
	NodesWithFindings int             `json:"nodesWithFindings"`
	GroupBy           string          `json:"groupBy"`
	Groups            []summary.Group `json:"groups"` // each group's counts over every cluster
}

// clustersJUnit is one testsuite per cluster: its cases as alone, or one
// case in error when it could not be judged.
func clustersJUnit(w io.Writer, parts []judgedCluster, view View) error {
	suites := make([]junitSuite, len(parts))
	for i, pt := range parts {
		if pt.Err != nil {
			suites[i] = junitSuite{Name: pt.Context, Tests: 1, Errors: 1, Time: noTime, Cases: []junitCase{{
				Name: "judged", Classname: pt.Context, Time: noTime, Error: &junitFailure{Type: "error", Message: pt.ErrorLine()},
			}}}
		} else {
			c, err := casesOf(pt.view, view)
			if err != nil {
				return err
			}
			suites[i] = suite(pt.Context, c)
		}
		suites[i].Hostname = pt.Server
	}
	return writeSuites(w, view, suites...)
}
