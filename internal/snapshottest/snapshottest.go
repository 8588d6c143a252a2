// Package snapshottest builds snapshots by hand for the pure judges' tests
// (pkg/judge, pkg/explain, pkg/summary, …): nodes that ask for operands,
// operand pods running on them, the operands' DaemonSets, written the way a
// test thinks of them, so that each test states only what differs. It
// imports the snapshot's types, never a client: the judges' tests stay pure.
package snapshottest

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Asks are deploy labels that ask for each of the operands ("true").
func Asks(ops ...operand.Operand) map[string]string {
	l := map[string]string{}
	for _, o := range ops {
		l[o.LabelKey()] = "true"
	}
	return l
}

// Node is a Ready node with the labels.
func Node(name string, labels map[string]string, opts ...NodeOption) snapshot.Node {
	n := snapshot.Node{Name: name, Labels: labels, Ready: true}
	for _, o := range opts {
		o(&n)
	}
	return n
}

// NodeOption changes a node Node makes.
type NodeOption func(*snapshot.Node)

// Taints gives the node the taints.
func Taints(taints ...corev1.Taint) NodeOption {
	return func(n *snapshot.Node) { n.Taints = taints }
}

// Running is a Running pod of the operand's DaemonSet on the node, named
// after both.
func Running(node string, o operand.Operand) snapshot.Pod {
	return snapshot.Pod{Name: o.DaemonSet + "-" + node, Node: node, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning}
}

// DaemonSet is the operand's DaemonSet as the lab and the operator write
// them: it selects the operand's deploy label "true" and tolerates nothing.
func DaemonSet(o operand.Operand) snapshot.DaemonSet {
	return snapshot.DaemonSet{Name: o.DaemonSet, NodeSelector: map[string]string{o.LabelKey(): "true"}}
}

// Builder builds a snapshot step by step.
type Builder struct{ s snapshot.Snapshot }

// New starts a snapshot of the namespace.
func New(namespace string) *Builder { return &Builder{s: snapshot.Snapshot{Namespace: namespace}} }

// Node adds a node (Node).
func (b *Builder) Node(name string, labels map[string]string, opts ...NodeOption) *Builder {
	b.s.Nodes = append(b.s.Nodes, Node(name, labels, opts...))
	return b
}

// Running adds a Running pod of each operand on the node (Running).
func (b *Builder) Running(node string, ops ...operand.Operand) *Builder {
	for _, o := range ops {
		b.s.Pods = append(b.s.Pods, Running(node, o))
	}
	return b
}

// DaemonSets adds each operand's DaemonSet (DaemonSet).
func (b *Builder) DaemonSets(ops ...operand.Operand) *Builder {
	for _, o := range ops {
		b.s.DaemonSets = append(b.s.DaemonSets, DaemonSet(o))
	}
	return b
}

// DevicePools gives the node the pools of DRA devices (none: the read
// listed the ResourceSlices and found none for it).
func (b *Builder) DevicePools(node string, pools ...snapshot.DevicePool) *Builder {
	if b.s.DevicePools == nil {
		b.s.DevicePools = map[string][]snapshot.DevicePool{}
	}
	b.s.DevicePools[node] = append(b.s.DevicePools[node], pools...)
	return b
}

// Snapshot is the snapshot built.
func (b *Builder) Snapshot() *snapshot.Snapshot { return &b.s }
