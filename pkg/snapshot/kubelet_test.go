package snapshot_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestRefusedDevice reads the kubelet's refusals of a pod at admission as it
// writes them (kubernetes v1.37.2 pkg/kubelet/kubelet.go rejectPod,
// pkg/kubelet/lifecycle/predicate.go): a device refused, and nothing else.
func TestRefusedDevice(t *testing.T) {
	rejected := func(reason, message string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: snapshot.PluginWorkloadPrefix + "abcde"}, Spec: corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string // "": none refused
	}{
		{"device manager: none free", rejected("UnexpectedAdmissionError",
			"Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"), "nvidia.com/gpu"},
		{"a MIG device", rejected("UnexpectedAdmissionError",
			"Allocate failed due to requested number of devices unavailable for nvidia.com/mig-1g.10gb. Requested: 1, Available: 0, which is unexpected"), "nvidia.com/mig-1g.10gb"},
		{"resource fit: all requested", rejected("OutOfnvidia.com/gpu",
			"Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 8, capacity: 8"), "nvidia.com/gpu"},
		{"unhealthy devices: not a refusal for want of a free one", rejected("UnexpectedAdmissionError",
			"Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"), ""},
		{"out of cpu", rejected("OutOfcpu", "Node didn't have enough resource: cpu, requested: 100, used: 3900, capacity: 4000"), ""},
		{"evicted", rejected("Evicted", "The node was low on resource: memory."), ""},
	} {
		p := snapshot.PodFrom(tc.pod)
		got, ok := p.RefusedDevice()
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: RefusedDevice() = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
		if !p.IsPluginWorkload() {
			t.Errorf("%s: not a plugin workload pod", tc.name)
		}
		s := snapshot.Snapshot{Pods: []snapshot.Pod{p}}
		if nodes := s.RefusedNodes(); (len(nodes) == 1) != ok {
			t.Errorf("%s: RefusedNodes() = %v", tc.name, nodes)
		}
	}
}

// TestMissingRuntime finds the handler containerd has no runtime for in the
// kubelet's FailedCreatePodSandBox Event, as the threads paste it
// (NVIDIA/gpu-operator#730, #549), and nothing in other sandbox failures.
func TestMissingRuntime(t *testing.T) {
	ws := []snapshot.Warning{
		{Reason: "FailedMount", Message: `MountVolume.SetUp failed for volume "run-nvidia"`},
		{Reason: snapshot.FailedCreatePodSandBox, Message: `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured`},
	}
	if h, w, ok := snapshot.MissingRuntime(ws); !ok || h != "nvidia" || w.Reason != snapshot.FailedCreatePodSandBox {
		t.Errorf("MissingRuntime = %q, %+v, %v; want nvidia", h, w, ok)
	}
	other := []snapshot.Warning{{Reason: snapshot.FailedCreatePodSandBox, Message: `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox`}}
	if _, _, ok := snapshot.MissingRuntime(other); ok {
		t.Error("a network failure read as a missing runtime")
	}
}

// TestKeepWarning keeps the latest of each reason, latest first, at most
// MaxWarnings.
func TestKeepWarning(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 8, 1, 12, m, 0, 0, time.UTC) }
	var ws []snapshot.Warning
	for i, r := range []string{"A", "B", "A", "C", "D", "E"} {
		ws = snapshot.KeepWarning(ws, snapshot.Warning{Reason: r, Message: r, Time: at(i)})
	}
	ws = snapshot.KeepWarning(ws, snapshot.Warning{Reason: "E", Message: "older", Time: at(0)})
	var got string
	for _, w := range ws {
		got += w.Reason + w.Message[:1]
	}
	if got != "EEDDCCAA" {
		t.Errorf("kept %s, want E D C A (B the oldest dropped, the older E ignored)", got)
	}
}

// TestDeviceRequests counts a pod's devices as the kubelet admits it: the
// containers' sum, or an init container's if larger.
func TestDeviceRequests(t *testing.T) {
	gpus := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI),
			corev1.ResourceCPU: resource.MustParse("2")}}
	}
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Resources: gpus(3)}},
		Containers:     []corev1.Container{{Resources: gpus(1)}, {Resources: gpus(1)}, {}},
	}
	if got := snapshot.DeviceRequests(&spec); len(got) != 1 || got["nvidia.com/gpu"] != 3 {
		t.Errorf("DeviceRequests = %v, want nvidia.com/gpu 3", got)
	}
	spec.InitContainers = nil
	if got := snapshot.DeviceRequests(&spec); got["nvidia.com/gpu"] != 2 {
		t.Errorf("DeviceRequests = %v, want nvidia.com/gpu 2", got)
	}
	if got := snapshot.DeviceRequests(&corev1.PodSpec{Containers: []corev1.Container{{}}}); got != nil {
		t.Errorf("DeviceRequests of a pod without devices = %v", got)
	}
}

// TestTerminationMessage: the worst container's message, its current
// termination's else its last's.
func TestTerminationMessage(t *testing.T) {
	cs := corev1.ContainerStatus{Name: "nvidia-driver-ctr", RestartCount: 4,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "kernel headers missing"}}}
	p := snapshot.PodFrom(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}}})
	if p.Health.Message != "kernel headers missing" {
		t.Errorf("Message = %q", p.Health.Message)
	}
}
