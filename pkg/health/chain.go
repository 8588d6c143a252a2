package health

import (
	"cmp"
	"slices"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// chain is a roster's operands in start-up order, with what each needs: the
// order rules (operand.AllRules) and the init containers of the operator's
// release (operand.Release.Inits; those the policy leaves out dropped),
// both kept to the roster's operands.
type chain struct {
	ops   []operand.Operand // by rank, then roster order
	rank  map[string]int
	rules map[string][]operand.Rule // by dependent operand
	inits map[string][]operand.Init // by operand, in pod order
	// offered are the sharing and MIG configs (sharing.go); nil unread.
	offered *snapshot.Offers
	// kubelet is what the kubelet reports besides (kubelet.go).
	kubelet kubelet
}

func newChain(roster []operand.Operand, release operand.Release, p *snapshot.ClusterPolicy) chain {
	c := chain{rank: map[string]int{}, rules: map[string][]operand.Rule{}, inits: map[string][]operand.Init{}}
	in := func(name string) bool {
		return slices.ContainsFunc(roster, func(o operand.Operand) bool { return o.Name == name })
	}
	for _, r := range operand.RulesFor(roster, operand.AllRules) {
		c.rules[r.Operand] = append(c.rules[r.Operand], r)
	}
	for _, o := range roster {
		for _, i := range release.InitsOf(o.Name) {
			if i.When != "" && (p == nil || !p.Enabled[i.When]) {
				continue // the operator leaves it out of the pod
			}
			if i.WaitsOn != "" && !in(i.WaitsOn) {
				i.WaitsOn, i.Past = "", "" // waits for no one this cluster runs
			}
			c.inits[o.Name] = append(c.inits[o.Name], i)
		}
	}
	r := ranker{c: &c, step: map[step]int{}, busy: map[step]bool{}}
	for _, o := range roster {
		c.rank[o.Name] = r.rank(o.Name, "")
	}
	c.ops = slices.Clone(roster)
	slices.SortStableFunc(c.ops, func(a, b operand.Operand) int { return cmp.Compare(c.rank[a.Name], c.rank[b.Name]) })
	return c
}

// initIndex is the place of an init container in the operand's pod, -1 if
// the catalog does not know it.
func (c chain) initIndex(name, container string) int {
	return slices.IndexFunc(c.inits[name], func(i operand.Init) bool { return i.Container == container })
}

// step is an operand's pod up to one of its init containers ("": the whole
// pod, ready).
type step struct{ operand, upTo string }

// ranker numbers the steps of the chain: a step comes after everything it
// waits for, so the rank of a whole operand is one more than the longest
// chain of needs below it. Ranking by step, not operand, keeps the
// validator's two ends apart: the device plugin waits for its
// toolkit-validation, its plugin-validation for the device plugin.
type ranker struct {
	c    *chain
	step map[step]int
	busy map[step]bool // on the stack: a cycle in the catalog ranks as 0
}

func (r ranker) rank(name, upTo string) int {
	s := step{name, upTo}
	if v, ok := r.step[s]; ok {
		return v
	}
	if r.busy[s] {
		return 0
	}
	r.busy[s] = true
	defer delete(r.busy, s)
	v := 0
	for _, rule := range r.c.rules[name] {
		v = max(v, r.rank(rule.Needs, "")+1)
	}
	for _, i := range r.c.inits[name] {
		if i.WaitsOn != "" {
			v = max(v, r.rank(i.WaitsOn, i.Past)+1)
		}
		if i.Container == upTo {
			break
		}
	}
	r.step[s] = v
	return v
}
