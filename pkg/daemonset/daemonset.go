// Package daemonset holds what the DaemonSet controller adds on its own to
// the pods it makes, so that judging whether a DaemonSet admits a node is
// done the controller's way everywhere in gpuops.
package daemonset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
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

// UntoleratedTaint returns the first of the node's taints with one of the
// effects that the pods do not tolerate.
func (a Admission) UntoleratedTaint(n *corev1.Node, effects ...corev1.TaintEffect) (corev1.Taint, bool) {
	// Comparison operators in tolerations are an alpha feature (off by default).
	return schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, a.tolerations,
		func(t *corev1.Taint) bool { return slices.Contains(effects, t.Effect) }, false)
}
