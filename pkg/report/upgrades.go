package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/words"
)

// upgradesView is the driver rollout: in text its counts by verdict (and
// by group, when grouped), the budget of each policy (the ClusterPolicy's,
// or each NVIDIADriver's) and who uses it, then a line per node that is not
// done: "<node> <verdict> <state> since …: <cause>"; a table has every
// node. JSON and YAML are the rollout whole, with "grouped" when grouped.
type upgradesView struct{ r *outcome.Result }

func (u upgradesView) lines() []string {
	out := rolloutLines(u.r.Rollout, groupedOf(u.r.Fleet))
	for _, n := range u.r.Rollout.Nodes {
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
		out = append(out, line)
	}
	return out
}

func (u upgradesView) blocks(bool) []block {
	t := table{header: []string{"NODE", "VERDICT", "STATE", "SINCE", "CAUSE"}}
	for _, n := range u.r.Rollout.Nodes {
		since := ""
		if n.Since != nil {
			since = n.Since.UTC().Format("2006-01-02T15:04:05Z")
		}
		t.rows = append(t.rows, []cell{{text: n.Node}, verdictCell(n.Verdict), {text: n.State}, {text: since}, {text: n.Cause}})
	}
	return []block{{table: &t}}
}

func (u upgradesView) data(o *Origin) any {
	ro := *u.r.Rollout
	ro.Nodes = nonNil(ro.Nodes)
	return struct {
		*Origin
		*upgrade.Rollout
		Grouped *grouped `json:"grouped,omitempty"`
	}{o, &ro, groupedOf(u.r.Fleet)}
}

// verdictCell is an upgrade verdict, green when done, red otherwise.
func verdictCell(v string) cell {
	if v == upgrade.Done {
		return cell{v, green}
	}
	return cell{v, red}
}

// rolloutLines are the rollout's counts by verdict, per group when
// grouped, then each policy's budget: for each NVIDIADriver pool its own
// counts and budget.
func rolloutLines(r *upgrade.Rollout, groups *grouped) []string {
	out := []string{fmt.Sprintf("rollout: %s %s", nodeCount(len(r.Nodes)), verdictCounts(r.Counts))}
	if groups != nil {
		out = append(out, "by "+groups.By)
		for _, g := range groups.Groups {
			out = append(out, fmt.Sprintf("  %s %s", g.Name, verdictCounts(g.Counts)))
		}
	}
	if r.Policy != nil {
		out = append(out, budgetLine("ClusterPolicy", r.Budget))
	}
	for _, pl := range r.Pools {
		out = append(out, fmt.Sprintf("rollout (NVIDIADriver %s): %s", pl.Name, verdictCounts(pl.Counts)), budgetLine("NVIDIADriver "+pl.Name, pl.Budget))
	}
	return out
}

// verdictCounts is "done=n in-progress=m …", verdicts in name order.
func verdictCounts(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", v, counts[v]))
	}
	return strings.Join(parts, " ")
}

// grouped is the rollout's counts by the value of a node label
// (--group-by).
type grouped struct {
	By     string        `json:"by"`
	Groups []groupCounts `json:"groups"`
}

// groupCounts are one group's nodes in the rollout, by verdict.
type groupCounts struct {
	Name   string         `json:"name"`
	Counts map[string]int `json:"counts"`
}

// groupedOf is the fleet's rollout counts by group; nil when not grouped.
func groupedOf(f *summary.Fleet) *grouped {
	if f == nil {
		return nil
	}
	g := &grouped{By: f.GroupBy, Groups: []groupCounts{}}
	for _, fg := range f.Groups {
		if fg.Upgrades != nil {
			g.Groups = append(g.Groups, groupCounts{Name: fg.Name, Counts: fg.Upgrades})
		}
	}
	return g
}

// budgetLine is a policy's budget and who uses it.
func budgetLine(of string, bu upgrade.Budget) string {
	parallel := fmt.Sprint(bu.MaxParallel)
	if bu.MaxParallel == 0 {
		parallel = "unlimited"
	}
	l := fmt.Sprintf("budget (%s): maxParallelUpgrades %s, maxUnavailable %d of %s, %d free", of, parallel, bu.MaxUnavailable, nodeCount(bu.Nodes), bu.Available)
	if len(bu.InProgress) > 0 {
		l += "; upgrading: " + strings.Join(bu.InProgress, ",")
	}
	if len(bu.Unavailable) > 0 {
		l += "; unavailable: " + strings.Join(bu.Unavailable, ",")
	}
	return l
}

func nodeCount(n int) string { return words.Count(n, "node") }
