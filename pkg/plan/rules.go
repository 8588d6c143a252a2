package plan

import (
	"slices"

	"github.com/gpuops/gpuops/pkg/operand"
)

// paused reports whether the operand's deploy label says a helper of the
// operator paused it (operand.IsPaused).
func paused(labels map[string]string, name string) bool {
	return operand.IsPaused(labels[operand.LabelPrefix+name])
}

// Satisfied reports whether what the rule's dependent needs is there as far
// as the labels tell: asked for, provided by the host, or paused by the
// operator (whose helper pauses the dependents too and restores both).
func Satisfied(labels map[string]string, r operand.Rule) bool {
	return operand.Asks(labels, r.Needs) || r.HostProvides(labels) || paused(labels, r.Needs)
}

// Broken lists the rules that a node's deploy labels break: the dependent's
// label asks for it while what it needs is not Satisfied. It is order-check
// --all-rules judged on the labels, before any pod has moved; the guard's
// admission policy is generated to agree with it.
func Broken(labels map[string]string, rules []operand.Rule) []operand.Rule {
	var out []operand.Rule
	for _, r := range rules {
		if operand.Asks(labels, r.Operand) && !Satisfied(labels, r) {
			out = append(out, r)
		}
	}
	return out
}

// newlyBroken lists the rules that after breaks and before did not.
func newlyBroken(before, after map[string]string, rules []operand.Rule) []operand.Rule {
	was := Broken(before, rules)
	var out []operand.Rule
	for _, r := range Broken(after, rules) {
		if !slices.ContainsFunc(was, func(w operand.Rule) bool { return w.Finding == r.Finding }) {
			out = append(out, r)
		}
	}
	return out
}

// Dependents returns the operands that need name, directly or through
// others, grouped for taking them off: each group only after every group
// before it, so the operand furthest from name comes first (reverse
// start-up order). Within a group, operands keep the order of the rules.
func Dependents(rules []operand.Rule, name string) [][]string {
	return layers(rules, name, func(r operand.Rule) (from, to string) { return r.Needs, r.Operand })
}

// Dependencies returns the operands that name needs, directly or through
// others, grouped for bringing them up: the one furthest from name first
// (start-up order).
func Dependencies(rules []operand.Rule, name string) [][]string {
	return layers(rules, name, func(r operand.Rule) (from, to string) { return r.Operand, r.Needs })
}

// layers walks the rules as edges from name outward and groups what it
// reaches by the length of the longest path from name, longest first.
func layers(rules []operand.Rule, name string, edge func(operand.Rule) (from, to string)) [][]string {
	depth := map[string]int{name: 0}
	var order []string // reached operands, in rule order of first reach
	// The rules form no cycle, so a path is never longer than the rule count:
	// relaxing that many times settles every longest path.
	for range rules {
		for _, r := range rules {
			from, to := edge(r)
			d, reached := depth[from]
			if !reached {
				continue
			}
			if cur, seen := depth[to]; !seen || cur < d+1 {
				if !seen {
					order = append(order, to)
				}
				depth[to] = d + 1
			}
		}
	}
	deepest := 0
	for _, d := range depth {
		deepest = max(deepest, d)
	}
	var out [][]string
	for d := deepest; d >= 1; d-- {
		var group []string
		for _, o := range order {
			if depth[o] == d {
				group = append(group, o)
			}
		}
		out = append(out, group)
	}
	return out
}
