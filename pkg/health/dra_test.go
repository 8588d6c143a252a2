package health_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// draStack is what a GPUCluster's labeller asks for on a GPU node.
var draStack = []string{operand.Driver, operand.DRADriver, operand.DRAValidator, "dcgm-dra", "dcgm-exporter-dra"}

// draNode is a Ready GPU node of a GPUCluster: the DRA stack's deploy
// labels, no device in its allocatable.
func draNode(name string) snapshot.Node {
	labels := map[string]string{operand.GPUPresent: "true"}
	for _, o := range draStack {
		labels[deploy(o)] = "true"
	}
	return snapshot.Node{Name: name, Labels: labels, Ready: true}
}

// readyDRA is a ready pod of each operand of the DRA stack, but those named.
func readyDRA(node string, but ...string) []snapshot.Pod {
	var out []snapshot.Pod
	for _, o := range draStack {
		if !contains(but, o) {
			out = append(out, ready(o, node))
		}
	}
	return out
}

// gpus is the kubelet plugin's one pool of a node, complete: n devices, v
// of them vfio.
func gpus(node string, n, v int) snapshot.DevicePool {
	return snapshot.DevicePool{Name: node, Generation: 1, SliceCount: 1, Slices: 1, Devices: n, VFIO: v}
}

func xid(devices ...string) []snapshot.TaintedDevice {
	var out []snapshot.TaintedDevice
	for _, d := range devices {
		out = append(out, snapshot.TaintedDevice{Device: d, Key: "gpu.nvidia.com/xid", Value: "79", Effect: "NoSchedule"})
	}
	return out
}

// unboundValidator is the DRA validator's pod the scheduler cannot place:
// no device satisfies its claim.
func unboundValidator(node string) snapshot.Pod {
	p := pod(operand.DRAValidator, node, snapshot.PodHealth{}, corev1.PodPending)
	p.Node, p.Target, p.Reason = "", node, "0/3 nodes are available: 1 cannot allocate all claims."
	return p
}

// TestDRA judges the devices the DRA kubelet plugin publishes, on nodes of
// every kind beside it.
func TestDRA(t *testing.T) {
	tainted := gpus("n", 8, 0)
	tainted.Tainted = append(xid("gpu-0", "gpu-3"), snapshot.TaintedDevice{Device: "gpu-3", Key: "gpu.nvidia.com/gpu-lost", Effect: "NoExecute"})
	incomplete := snapshot.DevicePool{Name: "n", Generation: 3, SliceCount: 2, Slices: 1, Devices: 4, Tainted: xid("gpu-1")}
	for _, tc := range []struct {
		name  string
		node  snapshot.Node
		pods  []snapshot.Pod
		pools []snapshot.DevicePool
		read  bool // the read listed the ResourceSlices
		want  *want
		// evidence is a part of the cause's evidence line
		evidence string
	}{
		{name: "publishing its 8 GPUs", node: draNode("n"), pods: readyDRA("n"), pools: []snapshot.DevicePool{gpus("n", 8, 0)}, read: true},
		{name: "slices not read: the devices go unjudged", node: draNode("n"), pods: readyDRA("n")},
		{name: "no slice, the kubelet plugin and the validator ready", node: draNode("n"), pods: readyDRA("n"), read: true,
			want: &want{code: health.DevicesNotPublished, operand: operand.DRADriver, blocked: []string{},
				message: "the DRA kubelet plugin is ready, yet the node publishes no ResourceSlice of driver gpu.nvidia.com"},
			evidence: "no ResourceSlice of driver gpu.nvidia.com with spec.nodeName n"},
		{name: "no slice: the validator's claim waits behind the kubelet plugin", node: draNode("n"),
			pods: append(readyDRA("n", operand.DRAValidator), unboundValidator("n")), read: true,
			want: &want{code: health.DevicesNotPublished, operand: operand.DRADriver, blocked: []string{operand.DRAValidator}}},
		{name: "a slice listing no device", node: draNode("n"), pods: readyDRA("n"), pools: []snapshot.DevicePool{gpus("n", 0, 0)}, read: true,
			want:     &want{code: health.DevicesNotPublished, operand: operand.DRADriver, blocked: []string{}, message: "list no device"},
			evidence: "pool n generation 1: 1 of 1 ResourceSlices, 0 devices (0 vfio), 0 taints withholding"},
		{name: "pool incomplete: never read as no GPU", node: draNode("n"), pods: readyDRA("n"), pools: []snapshot.DevicePool{incomplete}, read: true,
			want: &want{code: health.PoolIncomplete, operand: operand.DRADriver, blocked: []string{},
				message: "pool n (generation 3) has 1 of its 2 ResourceSlices: its devices are not all published yet"},
			evidence: "also devices-tainted: 1 of 4 devices tainted against new claims: gpu-1 gpu.nvidia.com/xid=79:NoSchedule"},
		{name: "2 of 8 devices tainted", node: draNode("n"), pods: readyDRA("n"), pools: []snapshot.DevicePool{tainted}, read: true,
			want: &want{code: health.DevicesTainted, operand: operand.DRADriver, blocked: []string{},
				message: "2 of 8 devices tainted against new claims: gpu-0 gpu.nvidia.com/xid=79:NoSchedule, gpu-3 gpu.nvidia.com/xid=79:NoSchedule, gpu-3 gpu.nvidia.com/gpu-lost:NoExecute"}},
		{name: "the kubelet plugin crash-looping: its own cause, the slices not judged", node: draNode("n"),
			pods: append(readyDRA("n", operand.DRADriver), crashLoop(operand.DRADriver, "n", "gpus")), read: true,
			want: &want{code: health.CrashLoop, operand: operand.DRADriver, blocked: []string{}}},
		{name: "vfio-only: the validator's pod expected unbound", node: draNode("n"),
			pods: append(readyDRA("n", operand.DRAValidator), unboundValidator("n")), pools: []snapshot.DevicePool{gpus("n", 4, 4)}, read: true},
		{name: "vfio and gpu devices: an unbound validator is a finding", node: draNode("n"),
			pods: append(readyDRA("n", operand.DRAValidator), unboundValidator("n")), pools: []snapshot.DevicePool{gpus("n", 4, 2)}, read: true,
			want: &want{code: health.NotRunning, operand: operand.DRAValidator, blocked: []string{}, message: "cannot allocate all claims"}},
		{name: "vfio-only: a crash-looping validator is still a finding", node: draNode("n"),
			pods:  append(readyDRA("n", operand.DRAValidator), crashLoop(operand.DRAValidator, "n", "nvidia-dra-validator")),
			pools: []snapshot.DevicePool{gpus("n", 4, 4)}, read: true,
			want: &want{code: health.CrashLoop, operand: operand.DRAValidator, blocked: []string{}}},
		{name: "a sandbox node beside the DRA stack publishes nothing", node: gpuNode("n", map[string]string{
			operand.WorkloadConfigLabel: operand.VMPassthrough, deploy(operand.Driver): "", deploy(operand.ContainerToolkit): "",
			deploy(operand.OperatorValidator): "", deploy(operand.DevicePlugin): "", deploy(operand.GPUFeatureDiscovery): "",
			deploy(operand.DCGM): "", deploy(operand.DCGMExporter): "", deploy("vfio-manager"): "true"}),
			pods: []snapshot.Pod{ready("vfio-manager", "n")}, read: true},
		{name: "a device plugin node beside the DRA stack", node: gpuNode("n", nil), pods: readyAll("n"), read: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := snapshottest.New("gpu-operator")
			if tc.read {
				b.DevicePools(tc.node.Name, tc.pools...)
			}
			s := b.Snapshot()
			s.Nodes, s.Pods = []snapshot.Node{tc.node}, tc.pods
			v := health.Assess(s, operand.Real, now, stuckAfter)[0]
			if tc.want == nil {
				if !v.Usable || !v.Judged || v.Cause != nil || len(v.Evidence) != 0 {
					t.Fatalf("want usable, got %+v (cause %+v)", v, v.Cause)
				}
				return
			}
			if v.Usable || v.Cause == nil || v.Cause.Code != tc.want.code || v.Cause.Operand != tc.want.operand ||
				!strings.Contains(v.Cause.Message, tc.want.message) || strings.Join(v.Blocked, ",") != strings.Join(tc.want.blocked, ",") {
				t.Fatalf("got %+v cause %+v, want %s/%s with %q blocking %q", v, v.Cause, tc.want.code, tc.want.operand, tc.want.message, tc.want.blocked)
			}
			if len(v.Also) != 0 {
				t.Errorf("also %+v: one verdict per node, other causes in the evidence", v.Also)
			}
			if !strings.HasPrefix(v.Evidence[0], tc.want.operand+": ") || !strings.Contains(v.Evidence[0], tc.evidence) {
				t.Errorf("evidence %q, want the cause's with %q", v.Evidence, tc.evidence)
			}
		})
	}
}
