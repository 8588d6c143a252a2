package summary

import (
	"cmp"
	"slices"

	"github.com/gpuops/gpuops/pkg/operand"
)

// Total is the fleet of many clusters' fleets: their groups of the same name
// (one node pool's product across regions) counted together, the operands
// and rules of any of them. The nodes stay with their clusters, so Total has
// none; its groups still count the nodes with findings.
func Total(fleets []Fleet) Fleet {
	var t Fleet
	groups := map[string]*Group{}
	for _, f := range fleets {
		t.GroupBy = cmp.Or(t.GroupBy, f.GroupBy)
		for _, o := range f.Operands {
			if !slices.ContainsFunc(t.Operands, func(x operand.Operand) bool { return x.Name == o.Name }) {
				t.Operands = append(t.Operands, o)
			}
		}
		for _, r := range f.Rules {
			if !slices.ContainsFunc(t.Rules, func(x operand.Rule) bool { return x.Finding == r.Finding }) {
				t.Rules = append(t.Rules, r)
			}
		}
		for _, g := range f.Groups {
			tg := groups[g.Name]
			if tg == nil {
				tg = &Group{Name: g.Name, Operands: []OperandCounts{}, Order: []RuleCount{}}
				groups[g.Name] = tg
			}
			tg.add(g)
		}
	}
	for _, g := range groups {
		// The roster's order, as each cluster's groups have it.
		slices.SortStableFunc(g.Operands, func(a, b OperandCounts) int {
			return slices.IndexFunc(t.Operands, func(o operand.Operand) bool { return o.Name == a.Operand }) -
				slices.IndexFunc(t.Operands, func(o operand.Operand) bool { return o.Name == b.Operand })
		})
		if h := g.Health; h != nil {
			sortCauses(h.Causes)
		}
		t.Groups = append(t.Groups, *g)
	}
	slices.SortFunc(t.Groups, func(a, b Group) int { return compareGroups(a.Name, b.Name) })
	return t
}

// add counts another cluster's group of the same name into g.
func (g *Group) add(o Group) {
	g.Nodes += o.Nodes
	g.Findings += o.Findings
	for _, oc := range o.Operands {
		i := slices.IndexFunc(g.Operands, func(x OperandCounts) bool { return x.Operand == oc.Operand })
		if i < 0 {
			g.Operands = append(g.Operands, OperandCounts{Operand: oc.Operand})
			i = len(g.Operands) - 1
		}
		for s := range oc.Counts {
			g.Operands[i].Counts[s] += oc.Counts[s]
		}
	}
	for _, rc := range o.Order {
		i := slices.IndexFunc(g.Order, func(x RuleCount) bool { return x.Finding == rc.Finding })
		if i < 0 {
			g.Order = append(g.Order, RuleCount{Finding: rc.Finding})
			i = len(g.Order) - 1
		}
		g.Order[i].Nodes += rc.Nodes
	}
	for v, n := range o.Upgrades {
		if g.Upgrades == nil {
			g.Upgrades = map[string]int{}
		}
		g.Upgrades[v] += n
	}
	if o.Health == nil {
		return
	}
	if g.Health == nil {
		g.Health = &HealthCounts{Causes: []CauseCount{}}
	}
	g.Health.Ready += o.Health.Ready
	g.Health.Unusable += o.Health.Unusable
	if o.Health.GPUs != nil {
		if g.Health.GPUs == nil {
			g.Health.GPUs = &GPUCounts{}
		}
		g.Health.GPUs.add(o.Health.GPUs.GPUs, o.Health.GPUs.Nodes)
	}
	for _, c := range o.Health.Causes {
		i := slices.IndexFunc(g.Health.Causes, func(x CauseCount) bool { return x.Code == c.Code && x.Operand == c.Operand })
		if i < 0 {
			g.Health.Causes = append(g.Health.Causes, CauseCount{Code: c.Code, Operand: c.Operand})
			i = len(g.Health.Causes) - 1
		}
		g.Health.Causes[i].Nodes += c.Nodes
	}
}

// sortCauses puts the causes that make the most nodes unusable first.
func sortCauses(cs []CauseCount) {
	slices.SortStableFunc(cs, func(a, b CauseCount) int {
		return cmp.Or(b.Nodes-a.Nodes, cmp.Compare(a.Code, b.Code), cmp.Compare(a.Operand, b.Operand))
	})
}
