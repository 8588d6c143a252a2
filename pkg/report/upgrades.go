package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
)

// Upgrades prints the driver rollout: in text its counts by verdict (and
// by group, when grouped), the budget of each policy (the ClusterPolicy's,
// or each NVIDIADriver's) and who uses it, then a line per node that is not
// done: "<node> <verdict> <state> since …: <cause>"; a table has every
// node. JSON and YAML are the rollout whole, with "grouped" when grouped.
func (p Printer) Upgrades(w io.Writer, r *upgrade.Rollout, groups *Grouped) error {
	if p.Format.Data() {
		r.Nodes = nonNil(r.Nodes)
		return p.data(w, struct {
			*upgrade.Rollout
			Grouped *Grouped `json:"grouped,omitempty"`
		}{r, groups})
	}
	if p.Format == Table {
		t := table{header: []string{"NODE", "VERDICT", "STATE", "SINCE", "CAUSE"}}
		for _, n := range r.Nodes {
			since := ""
			if n.Since != nil {
				since = n.Since.UTC().Format("2006-01-02T15:04:05Z")
			}
			t.rows = append(t.rows, []cell{{text: n.Node}, verdictCell(n.Verdict), {text: n.State}, {text: since}, {text: n.Cause}})
		}
		return p.table(w, t)
	}
	var b strings.Builder
	writeRollout(&b, r, groups)
	for _, n := range r.Nodes {
		if n.Verdict == upgrade.Done {
			continue
		}
		line := strings.TrimSpace(n.Node + " " + n.Verdict + " " + n.State)
		if n.Since != nil {
			line += " since " + n.Since.UTC().Format("2006-01-02T15:04:05Z")
		}
		if n.Cause != "" {
			line += ": " + n.Cause
		}
		b.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictCell is an upgrade verdict, green when done, red otherwise.
func verdictCell(v string) cell {
	if v == upgrade.Done {
		return cell{v, green}
	}
	return cell{v, red}
}

// writeRollout writes the rollout's counts by verdict, per group when
// grouped, then each policy's budget: for each NVIDIADriver pool its own
// counts and budget.
func writeRollout(b *strings.Builder, r *upgrade.Rollout, groups *Grouped) {
	fmt.Fprintf(b, "rollout: %d nodes %s\n", len(r.Nodes), verdictCounts(r.Counts))
	if groups != nil {
		fmt.Fprintf(b, "by %s\n", groups.By)
		for _, g := range groups.Groups {
			fmt.Fprintf(b, "  %s %s\n", g.Name, verdictCounts(g.Counts))
		}
	}
	if r.Policy != nil {
		writeBudget(b, "ClusterPolicy", r.Budget)
	}
	for _, pl := range r.Pools {
		fmt.Fprintf(b, "rollout (NVIDIADriver %s): %s\n", pl.Name, verdictCounts(pl.Counts))
		writeBudget(b, "NVIDIADriver "+pl.Name, pl.Budget)
	}
}

// verdictCounts is "done=n in-progress=m …", verdicts in name order.
func verdictCounts(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", v, counts[v]))
	}
	return strings.Join(parts, " ")
}

// Grouped is the rollout's counts by the value of a node label
// (--group-by).
type Grouped struct {
	By     string        `json:"by"`
	Groups []GroupCounts `json:"groups"`
}

// GroupCounts are one group's nodes in the rollout, by verdict.
type GroupCounts struct {
	Name   string         `json:"name"`
	Counts map[string]int `json:"counts"`
}

// groupedOf is the fleet's rollout counts by group; nil when not grouped.
func groupedOf(f *summary.Fleet) *Grouped {
	if f == nil {
		return nil
	}
	g := &Grouped{By: f.GroupBy, Groups: []GroupCounts{}}
	for _, fg := range f.Groups {
		if fg.Upgrades != nil {
			g.Groups = append(g.Groups, GroupCounts{Name: fg.Name, Counts: fg.Upgrades})
		}
	}
	return g
}

func writeBudget(b *strings.Builder, of string, bu upgrade.Budget) {
	parallel := fmt.Sprint(bu.MaxParallel)
	if bu.MaxParallel == 0 {
		parallel = "unlimited"
	}
	fmt.Fprintf(b, "budget (%s): maxParallelUpgrades %s, maxUnavailable %d of %d nodes, %d free", of, parallel, bu.MaxUnavailable, bu.Nodes, bu.Available)
	if len(bu.InProgress) > 0 {
		fmt.Fprintf(b, "; upgrading: %s", strings.Join(bu.InProgress, ","))
	}
	if len(bu.Unavailable) > 0 {
		fmt.Fprintf(b, "; unavailable: %s", strings.Join(bu.Unavailable, ","))
	}
	b.WriteByte('\n')
}
