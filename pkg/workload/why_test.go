package workload

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestWhyEachCause: for each cause, a pending pod and a node that would
// take it but for that cause; the headline names it.
func TestWhyEachCause(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	gpu := func(name string, capacity, allocatable int64, change func(*snapshot.Node)) snapshot.Node {
		n := snapshot.Node{Name: name, Ready: true, Labels: map[string]string{"zone": "a"},
			Devices: map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: capacity, Allocatable: allocatable}}}
		if change != nil {
			change(&n)
		}
		return n
	}
	asks := func(n int64) snapshot.GPUPod {
		return snapshot.GPUPod{Namespace: "team-b", Name: "trainer-0", Phase: corev1.PodPending, Created: now.Add(-time.Hour),
			Requests: map[string]int64{snapshot.GPUResource: n}, Unscheduled: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."}
	}
	holds := func(node string, n int64) snapshot.GPUPod {
		return snapshot.GPUPod{Namespace: "team-a", Name: "job-" + node, Node: node, Phase: corev1.PodRunning, Requests: map[string]int64{snapshot.GPUResource: n}}
	}
	unusable := map[string]*health.Node{"n": {Judged: true, Cause: &health.Cause{Code: health.Order, Operand: "device-plugin", Message: "device-plugin runs without container-toolkit"}}}
	for _, tc := range []struct {
		name   string
		nodes  []snapshot.Node
		health map[string]*health.Node
		held   []snapshot.GPUPod
		pod    snapshot.GPUPod
		code   string
		says   string
	}{
		{"all allocated", []snapshot.Node{gpu("n", 8, 8, nil)}, nil, []snapshot.GPUPod{holds("n", 6)}, asks(4), AllAllocated, "6 of its 8 nvidia.com/gpu held by 1 pod(s): 1 in team-a: 2 free, asks 4"},
		{"unhealthy GPUs", []snapshot.Node{gpu("n", 8, 6, nil)}, nil, []snapshot.GPUPod{holds("n", 4)}, asks(4), GPUsUnhealthy, "2 of its 8 nvidia.com/gpu unhealthy"},
		{"cordoned", []snapshot.Node{gpu("n", 8, 8, func(n *snapshot.Node) { n.Unschedulable = true })}, nil, nil, asks(4), Cordoned, "cordoned, by unknown"},
		{"untolerated taint", []snapshot.Node{gpu("n", 8, 8, func(n *snapshot.Node) {
			n.Taints = []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
		})}, nil, nil, asks(4), UntoleratedTaint, "taint dedicated=infer:NoSchedule not tolerated"},
		{"selector mismatch", []snapshot.Node{gpu("n", 8, 8, nil)}, nil, nil, func() snapshot.GPUPod {
			p := asks(4)
			p.NodeSelector = map[string]string{"zone": "b"}
			return p
		}(), SelectorMismatch, "nodeSelector zone=b, the node's zone =a"},
		{"node unusable", []snapshot.Node{gpu("n", 8, 8, nil)}, unusable, nil, asks(4), NodeUnusable, "cannot run GPU work: order device-plugin"},
		{"exceeds every node", []snapshot.Node{gpu("n", 8, 8, nil)}, nil, nil, asks(16), ExceedsNode, "asks 16 nvidia.com/gpu, the node has 8"},
		{"fragmented", []snapshot.Node{gpu("n", 8, 8, nil), gpu("m", 8, 8, nil)}, nil, []snapshot.GPUPod{holds("n", 6), holds("m", 6)}, asks(4), Fragmented,
			"4 free GPU(s) on the nodes that would take it, not 4 on any one"},
		{"resource not offered", []snapshot.Node{{Name: "n", Ready: true, Devices: map[string]snapshot.DeviceCount{"nvidia.com/gpu.shared": {Capacity: 32, Allocatable: 32}}}},
			nil, nil, asks(1), ResourceNotOffered, "no node offers nvidia.com/gpu; offered: nvidia.com/gpu.shared on 1 node(s) (time-slicing with renameByDefault renames it)"},
		{"the scheduler's own reason", []snapshot.Node{gpu("n", 8, 8, nil)}, nil, nil, asks(4), Scheduler, "1 GPU node(s) would take it as gpuops reads them: 0/1 nodes are available"},
		// A person's cordon before the fleet being full: an alert on the
		// stack's codes never fires for a fleet merely full.
		{"precedence", []snapshot.Node{gpu("n", 8, 8, func(n *snapshot.Node) { n.Unschedulable = true }), gpu("m", 8, 8, nil)}, nil, []snapshot.GPUPod{holds("m", 8)}, asks(4), Cordoned, "n: cordoned"},
		{"on an unusable node", []snapshot.Node{gpu("n", 8, 8, nil)}, unusable, nil, holds("n", 1), OnUnusableNode,
			"bound to n, which cannot run GPU work: order device-plugin (device-plugin runs without container-toolkit)"},
		{"runtime not configured", []snapshot.Node{gpu("n", 8, 8, nil)}, map[string]*health.Node{"n": {Judged: true, Usable: true}}, nil, func() snapshot.GPUPod {
			p := holds("n", 1)
			p.Phase = corev1.PodPending
			return p
		}(), RuntimeNotConfigured, `bound to n, whose container runtime has no runtime "nvidia": the container toolkit has not configured it (the node: health says ready)`},
		{"driver not ready", []snapshot.Node{gpu("n", 8, 8, nil)}, nil, nil, func() snapshot.GPUPod {
			p := holds("n", 1)
			p.Phase, p.Namespace = corev1.PodPending, "team-b"
			p.NotStarted = hookError
			return p
		}(), DriverNotReady, "bound to n, where the NVIDIA container hook cannot reach the driver (the node: not a GPU node health judges)"},
		{"CUDA driver too old", []snapshot.Node{gpu("n", 8, 8, func(n *snapshot.Node) {
			n.Labels["nvidia.com/cuda.driver.major"], n.Labels["nvidia.com/cuda.driver.minor"] = "12", "4"
		})}, nil, nil, func() snapshot.GPUPod {
			p := holds("n", 1)
			p.Phase, p.Namespace = corev1.PodPending, "team-b"
			p.NotStarted = "StartError: " + cudaError
			return p
		}(), CUDADriverTooOld, "bound to n; its image requires CUDA >= 12.8, its driver supports CUDA 12.4 (GFD's labels)"},
	} {
		f := &snapshot.GPUPods{Pods: tc.held}
		warnings := map[string][]snapshot.Warning{"team-a/job-n": {{Reason: snapshot.FailedCreatePodSandBox,
			Message: `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured`}}}
		got := Why(f, []snapshot.GPUPod{tc.pod}, Cluster{Nodes: tc.nodes, Health: tc.health, Warnings: warnings, Now: now, StuckAfter: 5 * time.Minute})[0]
		if got.Code != tc.code || !strings.Contains(got.Message, tc.says) || !got.Finding() {
			t.Errorf("%s: %s %q (finding %v), want %s with %q", tc.name, got.Code, got.Message, got.Finding(), tc.code, tc.says)
		}
	}
}

// hookError is a container's state when the NVIDIA hook cannot load the
// driver's library, as the kubelet quotes containerd (NVIDIA/gpu-operator#625).
const hookError = "RunContainerError: failed to create containerd task: failed to create shim task: OCI runtime create failed: " +
	"runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: " +
	"exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: initialization error: load library failed: " +
	"libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown"

// cudaError is the hook's refusal of an image that needs a newer CUDA
// (NVIDIA/nvidia-container-toolkit#152).
const cudaError = "error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n" +
	"nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown"

func TestWhyRunningAndWaiting(t *testing.T) {
	now := time.Now()
	nodes := []snapshot.Node{{Name: "n", Ready: true, Devices: map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 8, Allocatable: 8}}}}
	f := &snapshot.GPUPods{}
	running := snapshot.GPUPod{Namespace: "a", Name: "r", Node: "n", Phase: corev1.PodRunning, Requests: map[string]int64{snapshot.GPUResource: 1}}
	young := snapshot.GPUPod{Namespace: "a", Name: "y", Phase: corev1.PodPending, Created: now.Add(-time.Minute), Requests: map[string]int64{snapshot.GPUResource: 16}}
	got := Why(f, []snapshot.GPUPod{running, young}, Cluster{Nodes: nodes, Now: now, StuckAfter: 5 * time.Minute})
	if got[0].State != Running || got[0].Code != "" || got[0].Finding() {
		t.Errorf("a running pod: %+v", got[0])
	}
	if got[1].State != Waiting || got[1].Code != ExceedsNode || got[1].Finding() {
		t.Errorf("a pod pending for less than stuck-after: %+v, want Waiting (exceeds-node), no finding", got[1])
	}
}

func TestWhyRejected(t *testing.T) {
	f := &snapshot.GPUPods{Rejected: []snapshot.RejectedPod{{Namespace: "a", Name: "x", Node: "n", Message: "Allocate failed"}, {Namespace: "a", Name: "y", Node: "n"}}}
	got := WhyRejected(f, f.Rejected[0])
	if got.Code != AdmissionRejected || got.State != Refused || !strings.Contains(got.Message, "(2 such pods there)") || !got.Finding() {
		t.Errorf("a pod refused at admission: %+v", got)
	}
}

// TestWhyKubeletDRA: the kubelet's side of a bound pod (a DRA prepare that
// fails, an admission deferred) and a claim asking a class that does not
// exist.
func TestWhyKubeletDRA(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	nodes := []snapshot.Node{{Name: "n", Ready: true}}
	bound := func(name string) snapshot.GPUPod {
		return snapshot.GPUPod{Namespace: "a", Name: name, Node: "n", Phase: corev1.PodPending, Created: now.Add(-time.Hour), Claims: []string{name}}
	}
	deferred := bound("deferred")
	deferred.Claims, deferred.Requests = nil, map[string]int64{snapshot.GPUResource: 1}
	deferred.Deferred = snapshot.DeviceNotReady + ": waiting for nvidia.com/gpu"
	unknown := snapshot.GPUPod{Namespace: "a", Name: "unknown", Phase: corev1.PodPending, Created: now.Add(-time.Hour), Claims: []string{"unknown"}}
	f := &snapshot.GPUPods{
		Claims: map[string]snapshot.Claim{
			"a/prepare": {Namespace: "a", Name: "prepare", Allocated: true, Devices: []string{"n/gpu-0"}, Classes: []string{"gpu.nvidia.com"}, Asks: 1},
			"a/unknown": {Namespace: "a", Name: "unknown", Classes: []string{"gpu.example.com"}, Asks: 1},
		},
		Classes: map[string]bool{"gpu.nvidia.com": true, "mig.nvidia.com": true, "other": false},
	}
	warnings := map[string][]snapshot.Warning{"a/prepare": {{Reason: snapshot.FailedPrepareDynamicResources,
		Message: "Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources failed for ResourceClaim prepare: error preparing devices"}}}
	got := Why(f, []snapshot.GPUPod{bound("prepare"), deferred, unknown}, Cluster{Nodes: nodes, Warnings: warnings, Now: now, StuckAfter: 5 * time.Minute})
	for i, want := range []struct{ code, says string }{
		{PrepareFailed, "bound to n, whose DRA kubelet plugin cannot prepare its claims' devices"},
		{DeviceNotReady, "bound to n, whose kubelet defers its admission"},
		{DeviceClassUnknown, "claim unknown asks device class gpu.example.com, which does not exist; the classes of gpu.nvidia.com's devices: gpu.nvidia.com, mig.nvidia.com"},
	} {
		if got[i].Code != want.code || !strings.Contains(got[i].Message, want.says) || !got[i].Finding() {
			t.Errorf("%s: %s %q, want %s with %q", got[i].Pod, got[i].Code, got[i].Message, want.code, want.says)
		}
	}
}

// TestWhyDRANodeByNode: a DRA pod whose claim waits gets the per-node codes
// of a pod asking nvidia.com/gpu, from the nodes' pools, the claims'
// allocations and health.
func TestWhyDRANodeByNode(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	pool := func(name string, devices int, tainted ...string) snapshot.DevicePool {
		p := snapshot.DevicePool{Name: name, Generation: 1, SliceCount: 1, Slices: 1, Devices: devices}
		for _, d := range tainted {
			p.Tainted = append(p.Tainted, snapshot.TaintedDevice{Device: d, Key: "gpu.nvidia.com/xid", Value: "79", Effect: "NoSchedule"})
		}
		return p
	}
	pod := snapshot.GPUPod{Namespace: "a", Name: "train", Phase: corev1.PodPending, Created: now.Add(-time.Hour), Claims: []string{"train-gpu"},
		Unscheduled: "0/3 nodes are available: 3 cannot allocate all claims."}
	claims := map[string]snapshot.Claim{
		"a/train-gpu": {Namespace: "a", Name: "train-gpu", Classes: []string{"gpu.nvidia.com"}, Asks: 2},
		"b/held":      {Namespace: "b", Name: "held", Allocated: true, Devices: []string{"full/gpu-0", "full/gpu-1", "full/gpu-2", "full/gpu-3"}},
	}
	holder := snapshot.GPUPod{Namespace: "b", Name: "holder", Node: "full", Phase: corev1.PodRunning, Claims: []string{"held"}}
	tainted := health.Cause{Code: health.DevicesTainted, Operand: "nvidia-dra-driver-gpu", Message: "3 of 4 devices tainted against new claims"}
	unpublished := health.Cause{Code: health.DevicesNotPublished, Operand: "nvidia-dra-driver-gpu", Message: "the node publishes no ResourceSlice"}
	c := Cluster{
		Nodes:  []snapshot.Node{{Name: "full", Ready: true}, {Name: "tainted", Ready: true}, {Name: "bare", Ready: true}, {Name: "cpu", Ready: true}},
		Pools:  map[string][]snapshot.DevicePool{"full": {pool("full", 4)}, "tainted": {pool("tainted", 4, "gpu-0", "gpu-1", "gpu-2")}},
		Health: map[string]*health.Node{"tainted": {Judged: true, Cause: &tainted}, "bare": {Judged: true, Cause: &unpublished}},
		Now:    now, StuckAfter: 5 * time.Minute,
	}
	f := &snapshot.GPUPods{Pods: []snapshot.GPUPod{holder, pod}, Claims: claims, Classes: map[string]bool{"gpu.nvidia.com": true}}
	got := Why(f, []snapshot.GPUPod{pod}, c)[0]
	var lines []string
	for _, n := range got.Nodes {
		for _, r := range n.Reasons {
			carries := ""
			if r.Health != nil {
				carries = " carrying " + r.Health.Code
			}
			lines = append(lines, n.Node+" "+r.Code+carries+": "+r.Message)
		}
	}
	want := []string{
		"bare node-unusable carrying devices-not-published: cannot run GPU work: devices-not-published nvidia-dra-driver-gpu (the node publishes no ResourceSlice)",
		"full all-allocated: 4 of its 4 gpu.nvidia.com held by 1 pod(s): 1 in b: 0 free, asks 2",
		"tainted node-unusable carrying devices-tainted: 3 of its 4 gpu.nvidia.com devices tainted against new claims (0 held): 1 free, asks 2",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") || got.Code != NodeUnusable || got.Said != pod.Unscheduled {
		t.Errorf("got %s %q\n%s\nwant node-unusable\n%s", got.Code, got.Message, strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// Healed and emptied, a node with its 4 devices takes it.
	c.Health, c.Pools["tainted"] = nil, []snapshot.DevicePool{pool("tainted", 4)}
	if got := Why(f, []snapshot.GPUPod{pod}, c)[0]; got.Code != Scheduler || !strings.Contains(got.Message, "1 GPU node(s) would take it") {
		t.Errorf("a node with free devices: %s %q, want scheduler", got.Code, got.Message)
	}
}
