package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/summary"
)

// A run across clusters (--contexts, --all-contexts) prints each cluster as
// the command prints it alone, stamped with its kubeconfig context, the
// same way in every command:
//
//   - text lines (and -o name's) start with "<context>: ";
//   - tables get a leading CONTEXT column, every cluster's rows in one table
//     (their other lines follow it, stamped as text);
//   - -o json|yaml is {"clusters":[{"context","server","error"?, …}]}, each
//     entry the fields the command prints alone;
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

// Clusters prints each cluster's result in the printer's format, stamped
// with its context, in the order given; their notes go to notes, stamped
// too. command names the JUnit document, as alone ("audit").
func (p Printer) Clusters(w, notes io.Writer, cs []outcome.Cluster, view View, command string) error {
	if p.Format == OpenReports {
		return clustersReports(w, notes, cs, view)
	}
	one := p
	if p.Format.Data() {
		one.Format = JSON // spliced into one document, then written in p's format
	}
	parts := make([]part, len(cs))
	var fleets []summary.Fleet
	for i, c := range cs {
		parts[i] = part{Cluster: c}
		if c.Err != nil {
			continue
		}
		var n bytes.Buffer
		if err := one.Result(&parts[i].out, &n, c.Result, view); err != nil {
			return fmt.Errorf("context %s: %w", c.Context, err)
		}
		stamp(notes, c.Context, n.Bytes())
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
		return clustersJUnit(w, parts, command)
	case Table, Wide:
		return p.clustersTables(w, parts, total)
	}
	var b bytes.Buffer
	for _, pt := range parts {
		pt.stampText(&b)
	}
	if total != nil {
		var t capture
		total.line(&t)
		if err := (Printer{Format: Text}).Summary(&t, total.Fleet); err != nil {
			return err
		}
		stamp(&b, FleetContext, t.text())
	}
	_, err := w.Write(b.Bytes())
	return err
}

// part is one cluster as the command prints it alone.
type part struct {
	outcome.Cluster
	out capture
}

// stampText writes the cluster's text lines, or its error, stamped.
func (pt part) stampText(w io.Writer) {
	if pt.Err != nil {
		fmt.Fprintf(w, "%s: error: %s\n", pt.Context, pt.ErrorLine())
		return
	}
	stamp(w, pt.Context, pt.out.text())
}

// stamp writes each line of b that is not blank after "<context>: ".
func stamp(w io.Writer, context string, b []byte) {
	var out bytes.Buffer
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimRight(line, "\n"); strings.TrimSpace(line) != "" {
			out.WriteString(context + ": " + line + "\n")
		}
	}
	_, _ = w.Write(out.Bytes())
}

// capture is where a cluster's output goes while it is printed with the
// others': its text, and each of its tables whole (table.write puts them
// here), so that every cluster's rows can be aligned in one table.
type capture struct{ blocks []captured }

// captured is text, or a table and whether its header is written.
type captured struct {
	text   []byte
	table  *table
	header bool
}

func (c *capture) Write(b []byte) (int, error) {
	if n := len(c.blocks); n > 0 && c.blocks[n-1].table == nil {
		c.blocks[n-1].text = append(c.blocks[n-1].text, b...)
	} else {
		c.blocks = append(c.blocks, captured{text: slices.Clone(b)})
	}
	return len(b), nil
}

func (c *capture) table(t table, header bool) {
	c.blocks = append(c.blocks, captured{table: &t, header: header})
}

// text is everything but the tables.
func (c *capture) text() []byte {
	var b []byte
	for _, bl := range c.blocks {
		b = append(b, bl.text...)
	}
	return b
}

// fleetTotal is summary's total of the clusters judged.
type fleetTotal struct {
	summary.Fleet
	Contexts, Errors int
}

// line is the total's first line: how many clusters, how many nodes.
func (t fleetTotal) line(w io.Writer) {
	nodes, findings := 0, 0
	for _, g := range t.Groups {
		nodes, findings = nodes+g.Nodes, findings+g.Findings
	}
	fmt.Fprintf(w, "contexts=%d errors=%d nodes=%d with-findings=%d\n", t.Contexts, t.Errors, nodes, findings)
}

// clustersTables merges the tables of the same columns of every cluster
// into one, behind a CONTEXT column, in the order they first come; each
// cluster's other lines (matrix's pod count), its error, and summary's
// total line follow, stamped.
func (p Printer) clustersTables(w io.Writer, parts []part, total *fleetTotal) error {
	var tables []*captured
	byHeader := map[string]*captured{}
	var rest bytes.Buffer
	add := func(context string, c capture) {
		for _, bl := range c.blocks {
			if bl.table == nil {
				stamp(&rest, context, bl.text)
				continue
			}
			key := strings.Join(bl.table.header, "\x00")
			m := byHeader[key]
			if m == nil {
				m = &captured{table: &table{header: append([]string{contextColumn}, bl.table.header...)}, header: bl.header}
				byHeader[key] = m
				tables = append(tables, m)
			}
			for _, r := range bl.table.rows {
				m.table.rows = append(m.table.rows, append([]cell{{text: context}}, r...))
			}
		}
	}
	for _, pt := range parts {
		if pt.Err != nil {
			pt.stampText(&rest)
			continue
		}
		add(pt.Context, pt.out)
	}
	if total != nil {
		var t capture
		total.line(&t)
		if err := summaryTables(&t, total.Fleet, nil, false); err != nil {
			return err
		}
		add(FleetContext, t)
	}
	for i, m := range tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := m.table.write(w, p.Color, m.header); err != nil {
			return err
		}
	}
	if rest.Len() > 0 && len(tables) > 0 && !p.NoHeaders {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	_, err := w.Write(rest.Bytes())
	return err
}

// clustersData writes {"clusters":[…]}: each entry the context, the server,
// and the error or the fields the command prints alone; summary's total as
// "fleet".
func (p Printer) clustersData(w io.Writer, parts []part, total *fleetTotal) error {
	doc := struct {
		Clusters []json.RawMessage `json:"clusters"`
		Fleet    *fleetData        `json:"fleet,omitempty"`
	}{Clusters: []json.RawMessage{}}
	for _, pt := range parts {
		head := struct {
			Context string `json:"context"`
			Server  string `json:"server"`
			Error   string `json:"error,omitempty"`
		}{Context: pt.Context, Server: pt.Server}
		if pt.Err != nil {
			head.Error = pt.ErrorLine()
		}
		entry, err := json.Marshal(head)
		if err != nil {
			return err
		}
		// The command's object, its fields after context and server.
		if own := bytes.TrimSpace(pt.out.text()); pt.Err == nil && len(own) > 2 && own[0] == '{' {
			entry = slices.Concat(entry[:len(entry)-1], []byte(","), own[1:])
		}
		doc.Clusters = append(doc.Clusters, entry)
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
func clustersJUnit(w io.Writer, parts []part, command string) error {
	doc := junitSuites{Name: "gpuops " + command, Time: noTime}
	for _, pt := range parts {
		var s junitSuite
		if pt.Err != nil {
			s = junitSuite{Name: pt.Context, Tests: 1, Errors: 1, Time: noTime, Cases: []junitCase{{
				Name: "judged", Classname: pt.Context, Time: noTime, Error: &junitFailure{Type: "error", Message: pt.ErrorLine()},
			}}}
		} else {
			var alone junitSuites
			if err := xml.Unmarshal(pt.out.text(), &alone); err != nil || len(alone.Suites) != 1 {
				return fmt.Errorf("context %s: JUnit of one suite: %v", pt.Context, err)
			}
			s = alone.Suites[0]
			s.Name = pt.Context
		}
		s.Hostname = pt.Server
		doc.Tests, doc.Failures, doc.Errors = doc.Tests+s.Tests, doc.Failures+s.Failures, doc.Errors+s.Errors
		doc.Suites = append(doc.Suites, s)
	}
	return writeSuites(w, doc)
}
