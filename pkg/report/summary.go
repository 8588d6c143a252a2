package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/words"
	"github.com/gpuops/gpuops/pkg/workload"
)

// findingStatus is the word a finding is printed with, as audit prints
// MISSING.
var findingStatus = map[string]string{summary.MissingFinding: "MISSING", summary.StuckFinding: "STUCK", summary.OrderFinding: "ORDER"}

// summaryView is the fleet grouped by its label: per group the node count
// and, per operand, the count of each state and the broken start-up rules;
// then only the nodes with findings, each finding with its reasons, as
// audit --explain prints them. Name is only those nodes. With the
// capacity counted (c), its block follows the groups: where the GPUs are,
// as gpuops capacity says it.
type summaryView struct {
	f summary.Fleet
	c *workload.Capacity
}

// capacityBlock is the capacity's lines under a heading, none when it was
// not counted.
func (s summaryView) capacityBlock() []string {
	if s.c == nil {
		return nil
	}
	return append([]string{"gpus by " + s.c.GroupBy}, capacityLines(s.c, "  ")...)
}

// failing are the nodes with findings.
func (s summaryView) failing() []summary.Node {
	var out []summary.Node
	for _, n := range s.f.Nodes {
		if len(n.Findings) > 0 {
			out = append(out, n)
		}
	}
	return out
}

func (s summaryView) lines() []string {
	f := s.f
	out := []string{"by " + f.GroupBy}
	width := 0
	for _, o := range f.Operands {
		width = max(width, len(o.Name))
	}
	for _, g := range f.Groups {
		out = append(out, fmt.Sprintf("%s nodes=%d with-findings=%d", g.Name, g.Nodes, g.Findings))
		for _, oc := range g.Operands {
			var b strings.Builder
			fmt.Fprintf(&b, "  %-*s", width, oc.Operand)
			for _, st := range summary.States {
				fmt.Fprintf(&b, " %s=%d", st, oc.Counts.Of(st))
			}
			out = append(out, b.String())
		}
		out = append(out, fmt.Sprintf("  %-*s %s", width, "order", brokenRules(g)))
		if h := g.Health; h != nil {
			out = append(out, fmt.Sprintf("  %-*s %s", width, "health", healthCounts(h)))
			if c := h.GPUs; c != nil {
				out = append(out, fmt.Sprintf("  %-*s %s", width, "gpus", gpuCounts(c)))
			}
			if len(h.OutOfService) > 0 {
				out = append(out, fmt.Sprintf("  %-*s %s", width, "out-of-service", actorCounts(h.OutOfService)))
			}
		}
		if !upgrade.Settled(g.Upgrades) { // a rollout shows only while under way or in trouble
			out = append(out, fmt.Sprintf("  %-*s %s", width, "upgrade", verdictCounts(g.Upgrades)))
		}
	}
	out = append(out, s.capacityBlock()...)
	if r := f.Rollout; r != nil && !upgrade.Settled(r.Counts) {
		out = append(out, rolloutLines(r, nil)...)
	}
	for _, n := range s.failing() {
		for _, fd := range n.Findings {
			out = append(out, fmt.Sprintf("%s %s %s (%s)", n.Name, findingStatus[fd.Kind], fd.Subject, explain.Messages(fd.Reasons)))
		}
	}
	return out
}

// blocks are a table of group × operand counts, one of the broken rules
// per group (when any), one of the upgrade verdicts per group (while a
// rollout is under way or in trouble) and one of the findings (when any).
func (s summaryView) blocks(bool) []block {
	counts := table{header: []string{"GROUP", "NODES", "OPERAND"}}
	for _, st := range summary.States {
		counts.header = append(counts.header, strings.ToUpper(st.String()))
	}
	rules := table{header: []string{"GROUP", "BROKEN RULE", "NODES"}}
	upgrades := table{header: []string{"GROUP", "UPGRADE", "NODES"}}
	for _, g := range s.f.Groups {
		for _, oc := range g.Operands {
			row := []cell{{text: g.Name}, {text: strconv.Itoa(g.Nodes)}, {text: oc.Operand}}
			for _, st := range summary.States {
				row = append(row, countCell(oc.Counts.Of(st), st == summary.Missing))
			}
			counts.rows = append(counts.rows, row)
		}
		for _, rc := range g.Order {
			if rc.Nodes > 0 {
				rules.rows = append(rules.rows, []cell{{text: g.Name}, {rc.Finding, red}, {text: strconv.Itoa(rc.Nodes)}})
			}
		}
		if !upgrade.Settled(g.Upgrades) { // a rollout shows only while under way or in trouble
			for _, v := range slices.Sorted(maps.Keys(g.Upgrades)) {
				upgrades.rows = append(upgrades.rows, []cell{{text: g.Name}, verdictCell(v), {text: strconv.Itoa(g.Upgrades[v])}})
			}
		}
	}
	findings := table{header: []string{"NODE", "GROUP", "STATUS", "SUBJECT", "WHY"}}
	for _, n := range s.failing() {
		for _, fd := range n.Findings {
			findings.rows = append(findings.rows, []cell{{text: n.Name}, {text: n.Group}, {findingStatus[fd.Kind], red}, {text: fd.Subject}, {text: explain.Messages(fd.Reasons)}})
		}
	}
	out := []block{{table: &counts}}
	if c := s.capacityBlock(); c != nil {
		out = append(out, block{lines: c})
	}
	for _, t := range []*table{&rules, &upgrades, &findings} {
		if len(t.rows) > 0 {
			out = append(out, block{table: t})
		}
	}
	return out
}

func (s summaryView) data(o *Origin) any {
	failing := s.failing()
	return struct {
		*Origin
		OK       bool               `json:"ok"`
		GroupBy  string             `json:"groupBy"`
		Groups   []summary.Group    `json:"groups"`
		Nodes    []summary.Node     `json:"nodes"` // with findings only
		Rollout  *rolloutTotals     `json:"rollout,omitempty"`
		Capacity *workload.Capacity `json:"capacity,omitempty"`
	}{o, len(failing) == 0, s.f.GroupBy, nonNil(s.f.Groups), nonNil(failing), totalsOf(s.f.Rollout), s.c}
}

func (s summaryView) names() []string {
	var out []string
	for _, n := range s.failing() {
		out = append(out, n.Name)
	}
	return out
}

// rolloutTotals is the rollout without its nodes: the summary's groups
// count them.
type rolloutTotals struct {
	Policy *snapshot.UpgradePolicy `json:"policy"`
	Budget upgrade.Budget          `json:"budget"`
	Pools  []upgrade.Pool          `json:"pools,omitempty"`
	Counts map[string]int          `json:"counts"`
}

func totalsOf(r *upgrade.Rollout) *rolloutTotals {
	if r == nil {
		return nil
	}
	return &rolloutTotals{r.Policy, r.Budget, r.Pools, r.Counts}
}

// healthCounts is "ready=n unusable=m" and the top causes,
// "code/operand=n".
func healthCounts(h *summary.HealthCounts) string {
	parts := []string{fmt.Sprintf("ready=%d", h.Ready), fmt.Sprintf("unusable=%d", h.Unusable)}
	for i, c := range h.Causes {
		if i == topCauses {
			break
		}
		parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimSuffix(c.Code+"/"+c.Operand, "/"), c.Nodes))
	}
	return strings.Join(parts, " ")
}

// gpuCounts is "asked=n advertised=m on k nodes".
func gpuCounts(c *summary.GPUCounts) string {
	return fmt.Sprintf("asked=%d advertised=%d on %s", c.Asked, c.Advertised, words.Count(c.Nodes, "node"))
}

// actorCounts is "actor=n ..." in the ledger's order of actors.
func actorCounts(byActor map[string]int) string {
	var parts []string
	for _, a := range ledger.Actors {
		if n := byActor[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", a, n))
		}
	}
	return strings.Join(parts, " ")
}

// topCauses is how many root causes a group's health line names.
const topCauses = 3

// brokenRules is "rule=n ..." for the rules some node of the group breaks,
// or "ok".
func brokenRules(g summary.Group) string {
	var parts []string
	for _, rc := range g.Order {
		if rc.Nodes > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", rc.Finding, rc.Nodes))
		}
	}
	if parts == nil {
		return "ok"
	}
	return strings.Join(parts, " ")
}

// countCell is a count, faint when zero and red when it counts findings.
func countCell(n int, finding bool) cell {
	switch {
	case n == 0:
		return cell{"0", faint}
	case finding:
		return cell{strconv.Itoa(n), red}
	}
	return cell{text: strconv.Itoa(n)}
}
