// Package verdict is everything the judges say about one node — audit, order
// check, matrix row and, when asked, why — and how a node's verdict changes.
// It is what the live judge (pkg/live) keeps per node and what its watchers
// print or export. Like the judges it is pure.
package verdict

import (
	"slices"
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Verdict is everything the judges say about one node.
type Verdict struct {
	Node    string
	Audit   judge.NodeAudit    // operands asked for (Asked) and those not running (Missing)
	Order   judge.OrderVerdict // broken rules of the start-up order
	Row     judge.MatrixRow    // which operands run there
	Explain explain.Report     // why, when asked for; else empty
}

// OK reports whether nothing is missing and no rule is broken.
func (v *Verdict) OK() bool { return v.Audit.OK() && v.Order.OK() }

// Of judges one node of a snapshot with the same judges as audit,
// order-check and matrix; explained adds the reasons of explain (the
// snapshot must then hold the DaemonSets). A snapshot of just the node, its
// pods and the DaemonSets is enough. It returns nil when the node is not in
// the snapshot.
func Of(s *snapshot.Snapshot, node string, roster []operand.Operand, rules []operand.Rule, explained bool) *Verdict {
	i := slices.IndexFunc(s.Nodes, func(n snapshot.Node) bool { return n.Name == node })
	if i < 0 {
		return nil
	}
	v := &Verdict{Node: node}
	for _, a := range judge.Audit(s, roster) {
		if a.Node == node {
			v.Audit = a
		}
	}
	for _, r := range judge.BuildMatrix(s, roster).Rows {
		if r.Node == node {
			v.Row = r
		}
	}
	// Order fails only on a node not in the snapshot, or on a rule about an
	// operand not in the roster, which operand.RulesFor leaves out.
	v.Order, _ = judge.Order(s, node, roster, rules)
	if explained {
		// No clock: a verdict must not change with time alone, or every
		// batch would report every paused node again; how long a pause
		// lasts is audit --stuck-after's to say.
		v.Explain = explain.Explain(s, roster, []judge.NodeAudit{v.Audit}, explain.Clock{})
	}
	return v
}

// Change is one node's verdict before and after a batch of events. Before
// is nil for a node judged for the first time, After for a node gone
// (deleted, or no longer selected).
type Change struct {
	Before, After *Verdict
}

// Node is the name of the node that changed.
func (c Change) Node() string {
	if c.After != nil {
		return c.After.Node
	}
	return c.Before.Node
}

// Batch is one round of judging: the first judges every node (Initial;
// every Change has Before nil), each later one the nodes that events touched
// since the round before.
type Batch struct {
	Time    time.Time
	Initial bool
	Changes []Change // verdicts that differ, in natural node order
	Judged  int      // nodes judged
	Took    time.Duration
	Roster  []operand.Operand
	Rules   []operand.Rule
}

// RuleOf finds the rule whose finding this is.
func RuleOf(rules []operand.Rule, finding string) operand.Rule {
	for _, r := range rules {
		if r.Finding == finding {
			return r
		}
	}
	return operand.Rule{Finding: finding}
}
