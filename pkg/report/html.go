package report

import (
	_ "embed"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/workload"
)

// Source says where and when a snapshot was taken, for a report that may be
// read long after and far from the cluster.
type Source struct {
	Context   string    // the kubeconfig context
	Server    string    // the API server's URL
	Namespace string    // of the operand DaemonSets
	Selector  string    // -l; empty when every node was judged
	Taken     time.Time // when the snapshot was read
}

//go:embed fleet.html.tmpl
var fleetTemplate string

var fleetPage = template.Must(template.New("fleet").Funcs(template.FuncMap{
	"status":   func(kind string) string { return findingStatus[kind] },
	"messages": explain.Messages,
	"join":     strings.Join,
	"trouble":  upgrade.Trouble,
	"actors":   actorCounts, // as summary's out-of-service line
}).Parse(fleetTemplate))

// HTML writes the fleet as one self-contained page: the summary by group,
// every finding with its reasons, and a node × operand grid grouped as the
// summary is, the nodes with findings first in each group, filterable by
// name, group and findings. Its CSS and script are inline and its content
// security policy forbids every fetch, so it reads the same offline, from a
// file, attached to a ticket, or printed.
func HTML(w io.Writer, f summary.Fleet, c *workload.Capacity, src Source) error {
	page := newPage(f, src)
	if c != nil {
		page.Capacity = &htmlCapacity{GroupBy: c.GroupBy, Lines: capacityLines(c, "")}
	}
	return fleetPage.Execute(w, page)
}

// htmlCapacity is where the GPUs are, as gpuops capacity prints it.
type htmlCapacity struct {
	GroupBy string
	Lines   []string
}

// newPage is the page of a fleet.
func newPage(f summary.Fleet, src Source) htmlPage {
	page := htmlPage{Source: src, Taken: src.Taken.UTC().Format("2006-01-02 15:04:05 MST"), TakenISO: src.Taken.UTC().Format(time.RFC3339),
		Fleet: f, Findings: f.Findings()}
	byGroup := map[string]*htmlGroup{}
	for _, g := range f.Groups {
		hg := &htmlGroup{Group: g}
		for _, oc := range g.Operands {
			hg.Counts = append(hg.Counts, htmlCounts{
				Asked: oc.Counts.Of(summary.Asked), Running: oc.Counts.Of(summary.Running), Missing: oc.Counts.Of(summary.Missing),
				Paused: oc.Counts.Of(summary.Paused), Disabled: oc.Counts.Of(summary.Disabled),
			})
		}
		page.Groups = append(page.Groups, hg)
		byGroup[g.Name] = hg
	}
	for _, n := range f.Nodes {
		row := htmlRow{Node: n, Cells: make([]htmlCell, len(n.Cells))}
		for i, c := range n.Cells {
			row.Cells[i] = cellView(c, f.Operands[i].Name, n.Findings)
		}
		if len(n.Findings) > 0 {
			page.FailingNodes++
		}
		g := byGroup[n.Group]
		g.Rows = append(g.Rows, row)
	}
	var findings []htmlFinding
	for _, g := range page.Groups {
		// Findings first; SortStableFunc keeps natural name order otherwise.
		slices.SortStableFunc(g.Rows, func(a, b htmlRow) int { return boolRank(len(b.Findings) > 0) - boolRank(len(a.Findings) > 0) })
		g.Chunks = chunks(g.Rows, gridRowHeight)
		for _, r := range g.Rows {
			for _, fd := range r.Findings {
				findings = append(findings, htmlFinding{Node: r.Name, Group: r.Group, Finding: fd})
			}
			if h := r.Health; h != nil && h.Judged && !h.Usable {
				page.Unusable++
			}
		}
	}
	page.FindingChunks = chunks(findings, findingRowHeight)
	if r := f.Rollout; r != nil && !upgrade.Settled(r.Counts) {
		u := &htmlUpgrade{Lines: rolloutLines(r, groupedOf(&f))}
		for _, n := range r.Nodes {
			if n.Verdict != upgrade.Done {
				u.Nodes = append(u.Nodes, n)
			}
		}
		page.Upgrade = u
	}
	return page
}

type htmlPage struct {
	Source
	Taken, TakenISO string
	Fleet           summary.Fleet
	Groups          []*htmlGroup
	Findings        int
	FailingNodes    int
	Unusable        int                      // GPU nodes that cannot run GPU work (their cause is in the grid)
	FindingChunks   []htmlChunk[htmlFinding] // every finding, in the grid's order
	Clusters        []htmlCluster            // of a run across clusters (ClustersHTML)
	Total           htmlCluster              // the Clusters' total
	Upgrade         *htmlUpgrade             // the driver rollout, while under way or in trouble
	Capacity        *htmlCapacity            // where the GPUs are, when counted
}

// htmlUpgrade is the driver rollout as gpuops upgrades prints it: its
// counts and budget lines, and the nodes not done.
type htmlUpgrade struct {
	Lines []string
	Nodes []upgrade.Node
}

type htmlGroup struct {
	summary.Group
	Counts []htmlCounts // by operand
	Rows   []htmlRow
	Chunks []htmlChunk[htmlRow] // Rows, cut for the grid
}

// Long lists are cut into tables of chunkRows rows that the browser lays
// out only when on screen; until then a chunk is taken to be Height pixels
// high, from a typical row's height, and the browser keeps the real height
// once it has drawn it.
const (
	chunkRows        = 200
	gridRowHeight    = 26 // one line
	findingRowHeight = 40 // the reason often wraps
)

type htmlChunk[T any] struct {
	Rows   []T
	Height int
}

func chunks[T any](rows []T, rowHeight int) []htmlChunk[T] {
	var out []htmlChunk[T]
	for c := range slices.Chunk(rows, chunkRows) {
		out = append(out, htmlChunk[T]{Rows: c, Height: len(c) * rowHeight})
	}
	return out
}

// htmlFinding is one row of the findings list.
type htmlFinding struct {
	Node, Group string
	summary.Finding
}

type htmlCounts struct{ Asked, Running, Missing, Paused, Disabled int }

type htmlRow struct {
	summary.Node
	Cells []htmlCell // by operand
}

// htmlCell is one grid cell: a class for its colour, a symbol for its shape
// (the two together, so colour is never the only sign), and a title in words.
type htmlCell struct{ Class, Symbol, Title string }

var cellLooks = map[summary.State]htmlCell{
	summary.Missing:  {Class: "m", Symbol: "✗"},
	summary.Paused:   {Class: "p", Symbol: "‖"},
	summary.Disabled: {Class: "d", Symbol: "–"},
	summary.Running:  {Symbol: "✓"}, // the grid's default colour: no class on 4 of 5 cells
}

func cellView(c summary.Cell, op string, findings []summary.Finding) htmlCell {
	s, ok := c.Shown()
	if !ok {
		return htmlCell{}
	}
	v := cellLooks[s]
	if s == summary.Running {
		return v // the common case: the legend says it, and 5,000 titles would weigh
	}
	v.Title = op + ": " + s.String()
	for _, f := range findings {
		if f.Kind != summary.OrderFinding && f.Subject == op {
			v.Title += " — " + explain.Messages(f.Reasons)
		}
	}
	return v
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
