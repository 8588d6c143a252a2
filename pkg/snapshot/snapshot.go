// Package snapshot is the model of the cluster state that every judgement is made from:
// one node list, one pod list of the operator's namespace and, when needed, its
// DaemonSets. The types are compact on purpose: they keep only what a judge
// reads, so a snapshot of thousands of nodes stays small. It imports API
// types only, never a client: pkg/snapshot/read fills it from the cluster.
package snapshot

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuops/gpuops/pkg/daemonset"
)

// Snapshot is the cluster state at one moment.
type Snapshot struct {
	Namespace  string
	Nodes      []Node
	Pods       []Pod
	DaemonSets []DaemonSet
	// Policy is the GPU Operator's ClusterPolicy, when there is one and it
	// was read; NVIDIADrivers are its NVIDIADriver objects (nil when they
	// were not read, empty when there are none).
	Policy        *ClusterPolicy
	NVIDIADrivers []NVIDIADriver
	// Notes say what the reader skipped and why (a CRD that is not served,
	// a list the user may not make), for --explain.
	Notes []string
}

// Node is what a judge needs of a node.
type Node struct {
	Name          string
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool
	Ready         bool
	// LabelChanges says who last wrote some of the labels, and when: only
	// those the reader was asked to trace (a helper's pause), nil otherwise.
	LabelChanges map[string]LabelChange
}

// Pod is what a judge needs of a pod.
type Pod struct {
	Name      string
	Node      string // spec.nodeName; empty while the pod is not scheduled
	DaemonSet string // name of the DaemonSet that controls the pod; empty if none does
	Phase     corev1.PodPhase
	Deleting  bool // deletionTimestamp is set
	// Reason says why a pod is not running, in the API's words: the
	// scheduler's message while unscheduled, else the pod's status reason
	// (e.g. Evicted) or a waiting container's (e.g. ImagePullBackOff).
	Reason string
	// Target is the node a DaemonSet pod was made for (the DaemonSet
	// controller pins it with a metadata.name node affinity), known before
	// the pod is scheduled; empty for other pods.
	Target string
}

// Placement is the node the pod is on or, for a daemon pod not yet bound,
// the node it was made for.
func (p Pod) Placement() string {
	if p.Node != "" {
		return p.Node
	}
	return p.Target
}

// Present reports whether the pod counts as running its operand: phase
// Running and not on its way out.
func (p Pod) Present() bool { return p.Phase == corev1.PodRunning && !p.Deleting }

// DaemonSet is what a judge needs of a DaemonSet.
type DaemonSet struct {
	Name                   string
	Labels                 map[string]string
	Controller             string // the controlling owner as Kind.group (ClusterPolicy.nvidia.com); empty if none
	NodeSelector           map[string]string
	Affinity               *corev1.Affinity
	Tolerations            []corev1.Toleration
	HostNetwork            bool // its pods also tolerate network-unavailable nodes
	DesiredNumberScheduled int32
}

// Admission is how the DaemonSet's pods are placed on nodes.
func (d DaemonSet) Admission() daemonset.Admission {
	return daemonset.NewAdmission(corev1.PodSpec{NodeSelector: d.NodeSelector, Affinity: d.Affinity, Tolerations: d.Tolerations, HostNetwork: d.HostNetwork})
}

// API rebuilds the API node's placement fields (name, labels, taints), for
// the admission helpers that take one.
func (n Node) API() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}, Spec: corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable}}
}

// NodeFrom converts an API node.
func NodeFrom(n *corev1.Node) Node {
	out := Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return out
}

// PodFrom converts an API pod.
func PodFrom(p *corev1.Pod) Pod {
	out := Pod{Name: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase, Deleting: p.DeletionTimestamp != nil,
		DaemonSet: daemonset.Controller(p)}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			out.Reason = c.Message
		}
	}
	if out.DaemonSet != "" {
		out.Target = daemonset.TargetNode(p)
	}
	if out.Reason == "" && out.Phase != corev1.PodRunning {
		out.Reason = statusReason(&p.Status)
	}
	return out
}

// statusReason is the pod's own reason (Evicted, NodeLost, ...) or else the
// first waiting container's (ImagePullBackOff, CrashLoopBackOff, ...).
func statusReason(st *corev1.PodStatus) string {
	join := func(reason, msg string) string {
		if msg == "" {
			return reason
		}
		return reason + ": " + msg
	}
	if st.Reason != "" || st.Message != "" {
		return join(st.Reason, st.Message)
	}
	for _, cs := range append(st.InitContainerStatuses[:len(st.InitContainerStatuses):len(st.InitContainerStatuses)], st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return join(w.Reason, w.Message)
		}
	}
	return ""
}

// DaemonSetFrom converts an API DaemonSet.
func DaemonSetFrom(d *appsv1.DaemonSet) DaemonSet {
	out := DaemonSet{
		Name:                   d.Name,
		Labels:                 d.Labels,
		NodeSelector:           d.Spec.Template.Spec.NodeSelector,
		Affinity:               d.Spec.Template.Spec.Affinity,
		Tolerations:            d.Spec.Template.Spec.Tolerations,
		HostNetwork:            d.Spec.Template.Spec.HostNetwork,
		DesiredNumberScheduled: d.Status.DesiredNumberScheduled,
	}
	if ref := metav1.GetControllerOf(d); ref != nil {
		out.Controller = ref.Kind + "." + schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).Group
	}
	return out
}
