// Package verdict is everything the judges say about one node — audit, order
// check, matrix row and, when asked, why, the rules its deploy labels break,
// its health and its part in the driver upgrade — and how a node's verdict
// changes (Change, and Batch: one round of the live tracker's judging).
// pkg/pipeline makes them; the live tracker (pkg/live) keeps one per node
// and its watchers print or export them. What the judges say of a whole
// cluster is an outcome.Result, which holds each node's verdict. It holds
// data only.
package verdict

import (
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/upgrade"
)

// Verdict is everything the judges say about one node.
type Verdict struct {
	Node  string
	Audit judge.NodeAudit // operands asked for (Asked) and those not running (Missing)
	Order judge.NodeOrder // broken rules of the start-up order
	Row   judge.MatrixRow // which operands run there
	// Explain is why, when asked for; nil for a node with nothing to
	// explain (a pointer: serve holds a verdict for every node, most with
	// nothing to say). Read it with Why.
	Explain *explain.Report
	// LabelsBreak are the rules the node's deploy labels break, judged on
	// the labels alone with every rule, as the guard judges a change (with
	// the pipeline's LabelsOnly).
	LabelsBreak []string
	// Health is whether the node can run GPU work, and if not the root
	// cause along the operator's start-up chain; nil unless asked for.
	Health *health.Node
	// Upgrade is the node's part in the driver rollout; nil unless asked
	// for, or when the node takes no part (no driver pod, no state label).
	Upgrade *upgrade.Node
	// Group is the node's value of the pipeline's GroupBy label
	// (summary.GroupOf); empty unless grouped.
	Group string
}

// GPU reports whether the verdict is of a GPU node: one health judged (a
// nil verdict, of a node gone, is not).
func (v *Verdict) GPU() bool { return v != nil && v.Health != nil && v.Health.Judged }

// Why is a copy of the verdict's explanation: empty when the node has
// nothing to explain or none was asked for.
func (v *Verdict) Why() explain.Report {
	if v.Explain == nil {
		return explain.Report{}
	}
	return *v.Explain
}

// OK reports whether nothing is missing and no rule is broken.
func (v *Verdict) OK() bool { return v.Audit.OK() && v.Order.OK() }

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
	// Rollout is the driver upgrade of every node the judge holds, when
	// it judges upgrades: the budget and counts are the fleet's. Its Nodes
	// are left out: each node's part is its verdict's Upgrade.
	Rollout *upgrade.Rollout
	Judged  int // nodes judged
	Took    time.Duration
	Roster  []operand.Operand
	Rules   []operand.Rule
}
