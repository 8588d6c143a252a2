// Package daemonset holds what the DaemonSet controller adds on its own to
// the pods it makes, so that judging whether a DaemonSet admits a node is
// done the controller's way everywhere in gpuops.
package daemonset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
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
