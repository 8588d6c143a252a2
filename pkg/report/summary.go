package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
)

// findingStatus is the word a finding is printed with, as audit prints
// MISSING.
var findingStatus = map[string]string{summary.MissingFinding: "MISSING", summary.StuckFinding: "STUCK", summary.OrderFinding: "ORDER"}

// Summary prints the fleet grouped by its label: per group the node count
// and, per operand, the count of each state and the broken start-up rules;
// then only the nodes with findings, each finding with its reasons, as
// audit --explain prints them. Name is only those nodes.
func (p Printer) Summary(w io.Writer, f summary.Fleet) error {
	var failing []summary.Node
	for _, n := range f.Nodes {
		if len(n.Findings) > 0 {
			failing = append(failing, n)
		}
	}
	switch {
	case p.Format.Data():
		return p.data(w, struct {
			OK      bool            `json:"ok"`
			GroupBy string          `json:"groupBy"`
			Groups  []summary.Group `json:"groups"`
			Nodes   []summary.Node  `json:"nodes"` // with findings only
			Rollout *rolloutTotals  `json:"rollout,omitempty"`
		}{len(failing) == 0, f.GroupBy, nonNil(f.Groups), nonNil(failing), totalsOf(f.Rollout)})
	case p.Format == Table:
		return summaryTables(w, f, failing, p.Color)
	case p.Format == Name:
		nodes := make([]string, len(failing))
		for i, n := range failing {
			nodes[i] = n.Name
		}
		return names(w, nodes)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "by %s\n", f.GroupBy)
	width := 0
	for _, o := range f.Operands {
		width = max(width, len(o.Name))
	}
	for _, g := range f.Groups {
		fmt.Fprintf(&b, "%s nodes=%d with-findings=%d\n", g.Name, g.Nodes, g.Findings)
		for _, oc := range g.Operands {
			fmt.Fprintf(&b, "  %-*s", width, oc.Operand)
			for _, s := range summary.States {
				fmt.Fprintf(&b, " %s=%d", s, oc.Counts.Of(s))
			}
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %-*s %s\n", width, "order", brokenRules(g))
		if h := g.Health; h != nil {
			fmt.Fprintf(&b, "  %-*s %s\n", width, "health", healthCounts(h))
		}
		if !upgrade.Settled(g.Upgrades) { // a rollout shows only while under way or in trouble
			fmt.Fprintf(&b, "  %-*s %s\n", width, "upgrade", verdictCounts(g.Upgrades))
		}
	}
	if r := f.Rollout; r != nil && !upgrade.Settled(r.Counts) {
		writeRollout(&b, r, nil)
	}
	for _, n := range failing {
		for _, fd := range n.Findings {
			fmt.Fprintf(&b, "%s %s %s (%s)\n", n.Name, findingStatus[fd.Kind], fd.Subject, explain.Messages(fd.Reasons))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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

// summaryTables prints a table of group × operand counts, one of the broken
// rules per group (when any), and one of the findings (when any).
func summaryTables(w io.Writer, f summary.Fleet, failing []summary.Node, color bool) error {
	counts := table{header: []string{"GROUP", "NODES", "OPERAND"}}
	for _, s := range summary.States {
		counts.header = append(counts.header, strings.ToUpper(s.String()))
	}
	rules := table{header: []string{"GROUP", "BROKEN RULE", "NODES"}}
	upgrades := table{header: []string{"GROUP", "UPGRADE", "NODES"}}
	for _, g := range f.Groups {
		for _, oc := range g.Operands {
			row := []cell{{text: g.Name}, {text: strconv.Itoa(g.Nodes)}, {text: oc.Operand}}
			for _, s := range summary.States {
				row = append(row, countCell(oc.Counts.Of(s), s == summary.Missing))
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
	for _, n := range failing {
		for _, fd := range n.Findings {
			findings.rows = append(findings.rows, []cell{{text: n.Name}, {text: n.Group}, {findingStatus[fd.Kind], red}, {text: fd.Subject}, {text: explain.Messages(fd.Reasons)}})
		}
	}
	if err := counts.write(w, color, true); err != nil {
		return err
	}
	for _, t := range []table{rules, upgrades, findings} {
		if len(t.rows) == 0 {
			continue
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
		if err := t.write(w, color, true); err != nil {
			return err
		}
	}
	return nil
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
