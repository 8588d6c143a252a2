package snapshot_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// daemonPod is a pod as the DaemonSet controller makes it: controlled by the
// DaemonSet and pinned to its node by a metadata.name node affinity.
func daemonPod(node string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: &yes},
		}},
		Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func TestPodFromTargetAndReason(t *testing.T) {
	unscheduled := daemonPod("n1")
	unscheduled.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/3 nodes are available: 1 Insufficient memory."}}
	pulling := daemonPod("n1")
	pulling.Spec.NodeName = "n1"
	pulling.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
	initCrash := daemonPod("n1")
	initCrash.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	evicted := daemonPod("n1")
	evicted.Spec.NodeName = "n1"
	evicted.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}
	running := daemonPod("n1")
	running.Spec.NodeName = "n1"
	running.Status = corev1.PodStatus{Phase: corev1.PodRunning, Reason: "ignored"}
	plain := daemonPod("n1")
	plain.OwnerReferences = nil

	for _, tc := range []struct {
		name           string
		pod            *corev1.Pod
		target, reason string
	}{
		{"unscheduled: scheduler's message", unscheduled, "n1", "0/3 nodes are available: 1 Insufficient memory."},
		{"waiting container: bound, no target", pulling, "", "ImagePullBackOff: Back-off pulling image"},
		{"waiting init container", initCrash, "n1", "CrashLoopBackOff"},
		{"evicted", evicted, "", "Evicted: The node was low on resource: memory."},
		{"running: no reason", running, "", ""},
		{"not a DaemonSet pod: no target", plain, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := snapshot.PodFrom(tc.pod)
			if p.Target != tc.target || p.Reason != tc.reason {
				t.Errorf("target %q reason %q, want %q %q", p.Target, p.Reason, tc.target, tc.reason)
			}
			if tc.pod != plain && p.Placement() != "n1" {
				t.Errorf("placement %q, want n1 (bound there or made for it)", p.Placement())
			}
		})
	}
}
