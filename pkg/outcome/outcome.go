// Package outcome is what the judges say of one cluster, as plain values:
// the verdict of each node and the fleet's and rollout's views of them
// (Result), and one kubeconfig context's part of a run across clusters
// (Cluster). pkg/pipeline makes a Result; pkg/report, pkg/openreports and
// pkg/clusters read it. It holds data only and links no API client.
package outcome

import (
	"slices"
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/words"
	"github.com/gpuops/gpuops/pkg/workload"
)

// Result is everything the judges say about the nodes of one snapshot.
type Result struct {
	Namespace string // of the operand DaemonSets and their pods
	Selector  string // the label selector of the nodes judged; empty: all
	// Node is the one node judged (order-check NODE); empty: every node.
	Node string
	// Named reports whether the nodes judged were named (order-check NODE,
	// health NODE...) rather than read as a whole.
	Named   bool
	Explain bool              // the verdicts carry the reasons
	Roster  []operand.Operand // the operands judged
	Notes   []string          // what the read and the roster say to the reader
	// LogNotes say which failing containers' logs could not be read, when
	// they were asked for (health --logs): a right missing, a log gone.
	LogNotes []string
	Taken    time.Time         // the "now" the nodes were judged at
	Nodes    []verdict.Verdict // natural name order
	// TotalPods are the Running pods of any DaemonSet in the namespace.
	TotalPods int
	// Disabled are the roster's operands the ClusterPolicy switches off.
	Disabled []explain.Off
	// Fleet is the grouped view, when the nodes are grouped by a label.
	Fleet *summary.Fleet
	// Rollout is the driver upgrade, when upgrades are judged.
	Rollout *upgrade.Rollout
	// Capacity is where the GPUs are, grouped as Fleet, when counted
	// (summary, report --html).
	Capacity *workload.Capacity `json:",omitempty"`
	// Operator is the GPU Operator's version and the release it was judged
	// as; nil when no operator was found (judged as the newest, silently).
	Operator *Operator
}

// Operator is the GPU Operator's version as read and the release whose
// rules judged the cluster (snapshot.Snapshot.Release).
type Operator struct {
	// Version is the operator's image tag (or the chart's label); empty
	// when neither was found and the release was told from the served
	// ClusterPolicy CRD's schema, as the note says.
	Version  string `json:"version"`
	JudgedAs string `json:"judgedAs"`       // the release line, vYY.M
	Note     string `json:"note,omitempty"` // why it was judged as another release, or how it was found
}

// OperatorOf is the operator's version the snapshot read and the release
// it is judged as; nil when neither the version nor the CRD's schema was
// read.
func OperatorOf(s *snapshot.Snapshot) *Operator {
	if s.OperatorVersion == "" && s.CRDFields == nil {
		return nil
	}
	r, note := s.Release()
	return &Operator{Version: s.OperatorVersion, JudgedAs: r.Version, Note: note}
}

// Line says it in a sentence, for the notes.
func (o *Operator) Line() string {
	if o.Note != "" {
		return o.Note
	}
	return "GPU Operator " + o.Version + ": judged by the rules of release " + o.JudgedAs
}

// Verdict is the verdict of the node named; a NodeNotFoundError if the node
// is not in the cluster.
func (r *Result) Verdict(node string) (*verdict.Verdict, error) {
	for i := range r.Nodes {
		if r.Nodes[i].Node == node {
			return &r.Nodes[i], nil
		}
	}
	return nil, &judge.NodeNotFoundError{Node: node}
}

// AuditFailed reports whether any node misses an operand or has one stuck.
func (r *Result) AuditFailed() bool {
	return slices.ContainsFunc(r.Nodes, func(v verdict.Verdict) bool { return !v.Audit.OK() })
}

// Unusable reports whether a GPU node cannot run GPU work (with health).
func (r *Result) Unusable() bool {
	return slices.ContainsFunc(r.Nodes, func(v verdict.Verdict) bool { return v.Health != nil && !v.Health.Usable })
}

// UpgradeFailed reports whether a node's driver upgrade failed, is stuck
// or left the node cordoned (with upgrades).
func (r *Result) UpgradeFailed() bool {
	return r.Rollout != nil && slices.ContainsFunc(r.Rollout.Nodes, func(n upgrade.Node) bool { return upgrade.Trouble(n.Verdict) })
}

// FleetFailed reports whether any node has a finding of the fleet views
// (summary, report): missing, stuck or a broken rule.
func (r *Result) FleetFailed() bool { return r.Fleet != nil && r.Fleet.Findings() > 0 }

// OrderFailed reports whether any node breaks a rule.
func (r *Result) OrderFailed() bool {
	return slices.ContainsFunc(r.Nodes, func(v verdict.Verdict) bool { return !v.Order.OK() })
}

// Cluster is one kubeconfig context's part of a run across clusters.
type Cluster struct {
	Context string
	Server  string  // the API server's URL
	Result  *Result // nil when Err is set
	// Err says why the cluster could not be judged: unreachable, forbidden,
	// without the NODE asked for.
	Err error
}

// ErrorLine is the cluster's error on one line.
func (c Cluster) ErrorLine() string { return words.ErrorLine(c.Err) }
