package snapshot

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// TestIsGPUIsTheOperatorsRule walks the operator's rule and the waiting
// claims it leaves out, one pod each.
func TestIsGPUIsTheOperatorsRule(t *testing.T) {
	f := &GPUPods{
		Claims: map[string]Claim{
			"ns/gpu":       {Allocated: true, Devices: []string{"node-a/gpu-0"}},
			"ns/admin":     {Allocated: true}, // admin access, or another driver's devices
			"ns/wait-gpu":  {Classes: []string{"gpu.nvidia.com"}},
			"ns/wait-none": {Classes: []string{"nope.example.com"}},
			"ns/wait-fpga": {Classes: []string{"fpga.example.com"}},
		},
		Classes: map[string]bool{"gpu.nvidia.com": true, "fpga.example.com": false},
	}
	for _, tc := range []struct {
		name string
		pod  GPUPod
		want bool
	}{
		{"asks nvidia.com/gpu", GPUPod{Phase: corev1.PodPending, Requests: map[string]int64{"nvidia.com/gpu": 1}}, true},
		{"Running, asks a MIG device", GPUPod{Phase: corev1.PodRunning, Requests: map[string]int64{"nvidia.com/mig-1g.10gb": 1}}, true},
		{"Unknown phase", GPUPod{Phase: corev1.PodUnknown, Requests: map[string]int64{"nvidia.com/gpu": 1}}, false},
		{"claim allocated GPUs", GPUPod{Namespace: "ns", Phase: corev1.PodRunning, Claims: []string{"gpu"}}, true},
		{"claim allocated no GPU", GPUPod{Namespace: "ns", Phase: corev1.PodRunning, Claims: []string{"admin"}}, false},
		{"claim not found", GPUPod{Namespace: "ns", Phase: corev1.PodPending, Claims: []string{"gone"}}, true},
		{"claim waits for a GPU class", GPUPod{Namespace: "ns", Phase: corev1.PodPending, Claims: []string{"wait-fpga", "wait-gpu"}}, true},
		{"claim waits for a class that does not exist", GPUPod{Namespace: "ns", Phase: corev1.PodPending, Claims: []string{"wait-none"}}, true},
		{"claim waits for another driver's class", GPUPod{Namespace: "ns", Phase: corev1.PodPending, Claims: []string{"wait-fpga"}}, false},
		{"claim not made yet", GPUPod{Namespace: "ns", Phase: corev1.PodPending, Claims: []string{""}}, false},
	} {
		if got := f.IsGPU(&tc.pod); got != tc.want {
			t.Errorf("%s: IsGPU = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without the classes read, a waiting claim is not judged by its class.
	f.Classes = nil
	if f.IsGPU(&GPUPod{Namespace: "ns", Phase: corev1.PodPending, Claims: []string{"wait-none"}}) {
		t.Error("a waiting claim judged by classes that were not read")
	}
}

func TestClaimFromAndGPUClass(t *testing.T) {
	yes, no := true, false
	c := resourcev1.ResourceClaim{
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "a", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2}},
			{Name: "b", FirstAvailable: []resourcev1.DeviceSubRequest{{DeviceClassName: "mig.nvidia.com", Count: 3}, {DeviceClassName: "gpu.nvidia.com", Count: 1}}},
			{Name: "c", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeAll}},
		}}},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-0", AdminAccess: &no},
			{Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-1", AdminAccess: &yes},
			{Driver: "fpga.example.com", Pool: "node-a", Device: "fpga-0"},
		}}}},
	}
	got := ClaimFrom(&c)
	// Asks: 2, the first alternative's 3, and 1 for all of a class's devices.
	want := Claim{Allocated: true, Devices: []string{"node-a/gpu-0"}, Classes: []string{"gpu.nvidia.com", "mig.nvidia.com"}, Asks: 6}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClaimFrom = %+v, want %+v", got, want)
	}
	class := func(expr string) *resourcev1.DeviceClass {
		return &resourcev1.DeviceClass{Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}}}
	}
	for expr, want := range map[string]bool{
		// the operator's own class (NVIDIA/gpu-operator v26.7.0, gpucluster-dra-driver-gpus-only.yaml)
		"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'": true,
		`device.driver=="gpu.nvidia.com"`:                   true,
		"device.driver == 'compute-domain.nvidia.com'":      false,
		"device.attributes['gpu.nvidia.com'].type == 'gpu'": false,
	} {
		if got := GPUClass(class(expr)); got != want {
			t.Errorf("GPUClass(%q) = %v, want %v", expr, got, want)
		}
	}
}

// TestNotStarted reads a container's word on why it does not start: a
// crash loop of failed starts by its last one, a running container never.
func TestNotStarted(t *testing.T) {
	startErr := &corev1.ContainerStateTerminated{Reason: "StartError", Message: "error running hook #0"}
	for _, tc := range []struct {
		name string
		cs   corev1.ContainerStatus
		want string
	}{
		{"waiting", corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RunContainerError", Message: "hook"}}}, "RunContainerError: hook"},
		{"failed start", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: startErr}}, "StartError: error running hook #0"},
		{"crash loop of failed starts", corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
			LastTerminationState: corev1.ContainerState{Terminated: startErr}}, "StartError: error running hook #0"},
		{"running since", corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: startErr}}, ""},
	} {
		if got := notStarted(&corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{tc.cs}}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
