// Package daemonset is the one home of what gpuops knows about DaemonSets and
// their pods, done the DaemonSet controller's way: which nodes a DaemonSet
// places pods on (Admission), which DaemonSet controls a pod (Controller),
// and which node a daemon pod belongs to before the scheduler binds it
// (TargetNode, NodeOf). It imports API types only, never a client.
package daemonset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// PodTolerations is a pod template's tolerations plus those the DaemonSet
// controller adds to every daemon pod (AddOrUpdateDaemonPodTolerations in
// k8s.io/kubernetes/pkg/controller/daemon/util): node problems and cordons
// never keep a daemon pod away; network-unavailable only for host-network pods.
func PodTolerations(template []corev1.Toleration, hostNetwork bool) []corev1.Toleration {
	defaults := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		defaults = append(defaults, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	// The controller replaces a template toleration with the same key and
	// effect; adding them after the template's has the same effect on matching.
	return append(slices.Clone(template), defaults...)
}

// Admission decides, the DaemonSet controller's way (NodeShouldRunDaemonPod
// in k8s.io/kubernetes/pkg/controller/daemon), which nodes a
// DaemonSet's pods go to: its pod template's node name, nodeSelector and
// required node affinity must match, and its pods' tolerations (PodTolerations)
// must tolerate the node's taints.
type Admission struct {
	nodeName    string
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []corev1.Toleration
}

// NewAdmission takes the placement fields of a DaemonSet's pod template.
func NewAdmission(spec corev1.PodSpec) Admission {
	return Admission{
		nodeName:    spec.NodeName,
		affinity:    nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity),
		tolerations: PodTolerations(spec.Tolerations, spec.HostNetwork),
	}
}

// Decision is how the controller treats one node.
type Decision struct {
	Run  bool // it wants a pod there: the node counts in desiredNumberScheduled
	Stay bool // a pod already there may keep running (it tolerates the NoExecute taints)
	// Why Run is false: the node is not selected, or the first untolerated
	// NoSchedule/NoExecute taint.
	NotSelected bool
	Taint       *corev1.Taint
}

// Decide judges the node as NodeShouldRunDaemonPod does: a selected node
// whose NoSchedule and NoExecute taints are all tolerated runs a pod; a
// selected node with only an untolerated NoSchedule taint keeps a pod that is
// already there.
func (a Admission) Decide(n *corev1.Node) Decision {
	if !a.Selects(n) {
		return Decision{NotSelected: true}
	}
	t, untolerated := a.untoleratedTaint(n, corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute)
	if !untolerated {
		return Decision{Run: true, Stay: true}
	}
	_, evicted := a.untoleratedTaint(n, corev1.TaintEffectNoExecute)
	return Decision{Stay: !evicted, Taint: &t}
}

// Selects reports whether the node matches the node name, selector and
// required affinity. A selector that does not parse matches nothing, as in
// the controller.
func (a Admission) Selects(n *corev1.Node) bool {
	if a.nodeName != "" && a.nodeName != n.Name {
		return false
	}
	ok, _ := a.affinity.Match(n)
	return ok
}

// untoleratedTaint returns the first of the node's taints with one of the
// effects that the pods do not tolerate.
func (a Admission) untoleratedTaint(n *corev1.Node, effects ...corev1.TaintEffect) (corev1.Taint, bool) {
	// Comparison operators in tolerations are an alpha feature (off by default).
	return schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, a.tolerations,
		func(t *corev1.Taint) bool { return slices.Contains(effects, t.Effect) }, false)
}

// Controller is the name of the DaemonSet that controls the pod (its
// controller reference), or "" when no DaemonSet does. It reads the
// reference in place: GetControllerOf's copy was one allocation for every
// pod a judge reads.
func Controller(p *corev1.Pod) string {
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "DaemonSet" && ref.APIVersion == "apps/v1" {
		return ref.Name
	}
	return ""
}

// TargetNode is the node a DaemonSet pod was made for, known before the
// scheduler binds it: the controller pins each pod with a required node
// affinity on metadata.name with exactly that node. "" for other pods.
func TargetNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// NodeOf is the node a daemon pod belongs to: the one it is bound to or,
// until the scheduler binds it, its TargetNode.
func NodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	return TargetNode(p)
}

// SelectorLabels are the node label keys a pod template's placement reads:
// its nodeSelector's and those of its required node affinity's match
// expressions (matchFields name the node, not a label), sorted, each once.
func SelectorLabels(spec corev1.PodSpec) []string {
	var keys []string
	for k := range spec.NodeSelector {
		keys = append(keys, k)
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				keys = append(keys, r.Key)
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
