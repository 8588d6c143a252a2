package snapshot_test

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestPodFromHealth(t *testing.T) {
	start, since := time.Unix(1000, 0), time.Unix(1060, 0)
	ready := func(s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodReady, Status: s, LastTransitionTime: metav1.Time{Time: since}}
	}
	initialized := func(s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodInitialized, Status: s}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Time{Time: since}}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(reason string, code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}
	}
	completed := corev1.ContainerStatus{Name: "driver-validation", Ready: true, State: terminated("Completed", 0)}

	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   snapshot.PodHealth
	}{
		{"ready", corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{initialized("True"), ready("True")},
			InitContainerStatuses: []corev1.ContainerStatus{completed},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "main", Ready: true, State: running}}},
			snapshot.PodHealth{Ready: true, ReadySince: since}},
		{"crash loop: the worst container, its restarts and last termination", corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{initialized("True"), ready("False")},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "sidecar", Ready: true, State: running, RestartCount: 9},
				{Name: "main", State: waiting("CrashLoopBackOff"), RestartCount: 5, LastTerminationState: terminated("Error", 1)},
			}},
			snapshot.PodHealth{ReadySince: since, Container: "main", State: "CrashLoopBackOff", LastState: "Error", Restarts: 5}},
		{"restarted, running, not ready: OOMKilled before", corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{initialized("True"), ready("False")},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", State: running, RestartCount: 2, LastTerminationState: terminated("", 137)},
			}},
			snapshot.PodHealth{ReadySince: since, Container: "main", State: "Running", LastState: "exit code 137", Restarts: 2}},
		{"image pull beats a failed termination", corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "a", State: terminated("OOMKilled", 137)},
				{Name: "b", State: waiting("ImagePullBackOff")},
				{Name: "c", State: waiting("ContainerCreating")},
			}},
			snapshot.PodHealth{Container: "b", State: "ImagePullBackOff"}},
		{"in its second init container, running", corev1.PodStatus{Phase: corev1.PodPending, StartTime: &metav1.Time{Time: start},
			Conditions: []corev1.PodCondition{initialized("False"), ready("False")},
			InitContainerStatuses: []corev1.ContainerStatus{completed,
				{Name: "toolkit-validation", State: running},
				{Name: "cuda-validation", State: waiting("PodInitializing")},
				{Name: "plugin-validation", State: waiting("PodInitializing")},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: waiting("PodInitializing")}}},
			snapshot.PodHealth{ReadySince: since, Started: start, Init: "toolkit-validation", InitDone: 1, InitTotal: 4, InitSince: since}},
		{"in an init container not yet running: since the pod started", corev1.PodStatus{Phase: corev1.PodPending, StartTime: &metav1.Time{Time: start},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "k8s-driver-manager", State: waiting("PodInitializing")}}},
			snapshot.PodHealth{Started: start, Init: "k8s-driver-manager", InitTotal: 1, InitSince: start}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := daemonPod("n1")
			pod.Status = tc.status
			if got := snapshot.PodFrom(pod).Health; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("health\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNodeFromDevices(t *testing.T) {
	q := func(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
	n := &corev1.Node{Status: corev1.NodeStatus{
		// Counted as the operator's validator counts them: shared GPUs
		// renamed too; the sandbox device plugin's passthrough GPUs not.
		Capacity: corev1.ResourceList{"nvidia.com/gpu": q(8), "nvidia.com/mig-1g.10gb": q(7), corev1.ResourceCPU: q(32),
			"nvidia.com/gpu.shared": q(4), "nvidia.com/GA100_A100_PCIE_40GB": q(2)},
		Allocatable: corev1.ResourceList{"nvidia.com/gpu": q(7), "nvidia.com/mig-1g.10gb": q(7), corev1.ResourceCPU: q(30)},
	}}
	want := map[string]snapshot.DeviceCount{"nvidia.com/gpu": {8, 7}, "nvidia.com/mig-1g.10gb": {7, 7}, "nvidia.com/gpu.shared": {4, 0}}
	if got := snapshot.NodeFrom(n).Devices; !reflect.DeepEqual(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	if got := snapshot.NodeFrom(&corev1.Node{}).Devices; got != nil {
		t.Errorf("a node without GPUs: devices %v, want nil", got)
	}
}
