package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/summary"
)

// htmlCluster is one row of a run's clusters table, or their total.
type htmlCluster struct {
	Context, Server, Error                  string
	Nodes, FailingNodes, Findings, Unusable int
}

// ClustersHTML writes the fleet of many clusters as one page, the page HTML
// writes for one: first a table of the clusters (each one's nodes, nodes
// with findings, findings and unusable GPU nodes, or why it could not be
// judged) and the fleet's total; then the summary, the findings and the
// grid grouped by cluster, then by pool ("<context> · <pool>"), the nodes
// named "<context>/<node>". It returns what the page holds, in a few words.
func ClustersHTML(w io.Writer, cs []outcome.Cluster, src Source) (string, error) {
	var fleets []summary.Fleet
	var rows []htmlCluster
	var total htmlCluster
	var contexts []string
	for _, c := range cs {
		contexts = append(contexts, c.Context)
		row := htmlCluster{Context: c.Context, Server: c.Server}
		if c.Err != nil {
			row.Error = c.ErrorLine()
			rows = append(rows, row)
			continue
		}
		f := *c.Result.Fleet
		fleets = append(fleets, f)
		row.Nodes, row.Findings = len(f.Nodes), f.Findings()
		for _, n := range f.Nodes {
			if len(n.Findings) > 0 {
				row.FailingNodes++
			}
			if h := n.Health; h != nil && h.Judged && !h.Usable {
				row.Unusable++
			}
		}
		total.Nodes, total.FailingNodes = total.Nodes+row.Nodes, total.FailingNodes+row.FailingNodes
		total.Findings, total.Unusable = total.Findings+row.Findings, total.Unusable+row.Unusable
		if src.Taken.IsZero() || c.Result.Taken.Before(src.Taken) {
			src.Taken = c.Result.Taken // the oldest read
		}
		rows = append(rows, row)
	}
	if failed := len(cs) - len(fleets); failed > 0 {
		total.Error = fmt.Sprintf("%d of %d contexts could not be judged", failed, len(cs))
	}
	if src.Taken.IsZero() {
		src.Taken = time.Now()
	}
	src.Context, src.Server = strings.Join(contexts, ", "), "one per context (Clusters, below)"
	page := newPage(byCluster(cs, summary.Total(fleets).Operands), src)
	page.Clusters, page.Total = rows, total
	holds := fmt.Sprintf("%d contexts, %s, %d findings", len(cs), nodeCount(total.Nodes), total.Findings)
	return holds, fleetPage.Execute(w, page)
}

// byCluster is one fleet of the clusters judged: their groups, each
// cluster's in turn, named "<context> · <group>", their nodes
// "<context>/<node>", on the operands of any of them.
func byCluster(cs []outcome.Cluster, operands []operand.Operand) summary.Fleet {
	out := summary.Fleet{Operands: operands}
	for _, c := range cs {
		if c.Err != nil {
			continue
		}
		f := c.Result.Fleet
		out.GroupBy = "context, then " + f.GroupBy
		at := make([]int, len(f.Operands)) // each operand's column in out
		for i, o := range f.Operands {
			at[i] = slices.IndexFunc(operands, func(x operand.Operand) bool { return x.Name == o.Name })
		}
		for _, g := range f.Groups {
			g.Name = c.Context + " · " + g.Name
			counts := make([]summary.OperandCounts, len(operands))
			for i, o := range operands {
				counts[i].Operand = o.Name
			}
			for i, oc := range g.Operands {
				counts[at[i]] = oc
			}
			g.Operands = counts
			out.Groups = append(out.Groups, g)
		}
		for _, n := range f.Nodes {
			cells := make([]summary.Cell, len(operands))
			for i, cell := range n.Cells {
				cells[at[i]] = cell
			}
			n.Name, n.Group, n.Cells = c.Context+"/"+n.Name, c.Context+" · "+n.Group, cells
			out.Nodes = append(out.Nodes, n)
		}
	}
	return out
}
