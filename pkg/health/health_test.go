package health_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

var now = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

const stuckAfter = 30 * time.Minute

// stack is what the operator's labeller asks for on a container GPU node
// with the ClusterPolicy's defaults (the node status exporter is off).
var stack = []string{operand.Driver, operand.ContainerToolkit, operand.OperatorValidator, operand.DevicePlugin,
	operand.GPUFeatureDiscovery, operand.DCGM, operand.DCGMExporter}

// gpuNode is a Ready node with 8 healthy GPUs asking for the stack, with
// labels changed by set ("" removes one).
func gpuNode(name string, set map[string]string) snapshot.Node {
	labels := map[string]string{operand.GPUPresent: "true", operand.GPUCountLabel: "8"}
	for _, o := range stack {
		labels[operand.LabelPrefix+o] = "true"
	}
	for k, v := range set {
		if v == "" {
			delete(labels, k)
		} else {
			labels[k] = v
		}
	}
	return snapshot.Node{Name: name, Labels: labels, Ready: true,
		Devices: map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 8, Allocatable: 8}}}
}

// devices gives the node these device counts in place of its 8 GPUs.
func devices(n snapshot.Node, d map[string]snapshot.DeviceCount) snapshot.Node {
	n.Devices = d
	return n
}

func deploy(o string) string { return operand.LabelPrefix + o }

func pod(o, node string, p snapshot.PodHealth, phase corev1.PodPhase) snapshot.Pod {
	op, err := operand.Lookup(operand.Real, o)
	if err != nil {
		panic(err)
	}
	return snapshot.Pod{Name: op.DaemonSet + "-" + node, Node: node, DaemonSet: op.DaemonSet, Phase: phase, Health: p}
}

func ready(o, node string) snapshot.Pod {
	return pod(o, node, snapshot.PodHealth{Ready: true, ReadySince: now.Add(-time.Hour)}, corev1.PodRunning)
}

// inInit is a pod in its init container named, with done of total completed.
func inInit(o, node, container string, done, total int) snapshot.Pod {
	return pod(o, node, snapshot.PodHealth{Init: container, InitDone: done, InitTotal: total,
		InitSince: now.Add(-10 * time.Minute), Started: now.Add(-10 * time.Minute)}, corev1.PodPending)
}

func crashLoop(o, node, container string) snapshot.Pod {
	return pod(o, node, snapshot.PodHealth{Container: container, State: "CrashLoopBackOff", LastState: "Error", Restarts: 7,
		ReadySince: now.Add(-20 * time.Minute)}, corev1.PodRunning)
}

// readyAll is a ready pod of each operand, but those named.
func readyAll(node string, but ...string) []snapshot.Pod {
	var out []snapshot.Pod
	for _, o := range stack {
		if !contains(but, o) {
			out = append(out, ready(o, node))
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func migPaused(name string, since time.Duration) snapshot.Node {
	set := map[string]string{deploy(operand.MIGManager): "true"}
	changes := map[string]snapshot.LabelChange{}
	for _, o := range operand.MIGChange.Operands {
		set[deploy(o)] = operand.MIGChange.Value
		changes[deploy(o)] = snapshot.LabelChange{Manager: operand.MIGChange.Manager, Time: now.Add(-since)}
	}
	n := gpuNode(name, set)
	n.LabelChanges = changes
	return n
}

type want struct {
	code, operand string
	blocked       []string
	message       string // a part of the cause's message
	also          []string
}

// TestAssess covers each cause code, and what waits behind it, over nodes in
// the states a GPU node goes through.
func TestAssess(t *testing.T) {
	waitingBehindValidator := func(node string) []snapshot.Pod {
		return []snapshot.Pod{
			inInit(operand.DevicePlugin, node, "toolkit-validation", 0, 2),
			inInit(operand.GPUFeatureDiscovery, node, "toolkit-validation", 0, 2),
			inInit(operand.DCGM, node, "toolkit-validation", 0, 1),
			inInit(operand.DCGMExporter, node, "toolkit-validation", 0, 1),
		}
	}
	for _, tc := range []struct {
		name string
		node snapshot.Node
		pods []snapshot.Pod
		want *want // nil: usable
	}{
		{"healthy full node", gpuNode("n", nil), readyAll("n"), nil},
		{"host driver: no driver pod, the rest ready", gpuNode("n", map[string]string{deploy(operand.Driver): "pre-installed"}),
			readyAll("n", operand.Driver), nil},
		{"MIG mixed strategy: MIG devices, no whole GPU", func() snapshot.Node {
			n := gpuNode("n", map[string]string{operand.MIGStrategyLabel: "mixed"})
			n.Devices = map[string]snapshot.DeviceCount{snapshot.GPUResource: {}, "nvidia.com/mig-1g.10gb": {Capacity: 7, Allocatable: 7}}
			return n
		}(), readyAll("n"), nil},
		{"time-slicing, renamed: 8 GPUs shared 4 ways as nvidia.com/gpu.shared, no nvidia.com/gpu",
			devices(gpuNode("n", nil), map[string]snapshot.DeviceCount{"nvidia.com/gpu.shared": {Capacity: 32, Allocatable: 32}}), readyAll("n"), nil},
		{"time-slicing, not renamed: 8 GPUs shared 4 ways as nvidia.com/gpu",
			devices(gpuNode("n", nil), map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 32, Allocatable: 32}}), readyAll("n"), nil},
		{"renamed shared GPUs, one GPU's 4 replicas unhealthy",
			devices(gpuNode("n", nil), map[string]snapshot.DeviceCount{"nvidia.com/gpu.shared": {Capacity: 32, Allocatable: 28}}), readyAll("n"),
			&want{code: health.GPUsUnhealthy, operand: operand.DevicePlugin, blocked: []string{}, message: "28 of 32 nvidia.com/gpu.shared allocatable: 4 unhealthy"}},
		{"renamed shared GPUs, none allocatable",
			devices(gpuNode("n", nil), map[string]snapshot.DeviceCount{"nvidia.com/gpu.shared": {Capacity: 32}}), readyAll("n"),
			&want{code: health.GPUsNotAdvertised, operand: operand.DevicePlugin, blocked: []string{}}},
		{"driver crash-looping: the whole stack waits", gpuNode("n", nil), append([]snapshot.Pod{
			crashLoop(operand.Driver, "n", "nvidia-driver-ctr"),
			inInit(operand.ContainerToolkit, "n", "driver-validation", 0, 1),
			inInit(operand.OperatorValidator, "n", "driver-validation", 0, 4),
		}, waitingBehindValidator("n")...), &want{code: health.CrashLoop, operand: operand.Driver,
			message: "container nvidia-driver-ctr of pod nvidia-driver-daemonset-n is in CrashLoopBackOff after 7 restarts, last terminated: Error",
			blocked: []string{operand.ContainerToolkit, operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM, operand.OperatorValidator}}},
		{"toolkit not ready: the validator and the GPU clients wait in init containers", gpuNode("n", nil), append([]snapshot.Pod{
			ready(operand.Driver, "n"),
			pod(operand.ContainerToolkit, "n", snapshot.PodHealth{ReadySince: now.Add(-5 * time.Minute)}, corev1.PodRunning),
			inInit(operand.OperatorValidator, "n", "toolkit-validation", 1, 4),
		}, waitingBehindValidator("n")...), &want{code: health.NotReady, operand: operand.ContainerToolkit, message: "not Ready since 2026-08-01T11:55:00Z (5m0s)",
			blocked: []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM, operand.OperatorValidator}}},
		{"validator failing its toolkit-validation, the toolkit ready", gpuNode("n", nil), append(readyAll("n", operand.OperatorValidator,
			operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGM, operand.DCGMExporter),
			append(waitingBehindValidator("n"), inInit(operand.OperatorValidator, "n", "toolkit-validation", 1, 4))...),
			&want{code: health.InitWaiting, operand: operand.OperatorValidator, message: "waits in init container toolkit-validation (Init:1/4) since 2026-08-01T11:50:00Z (10m0s)",
				blocked: []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM}}},
		{"validator failing cuda-validation: past toolkit-ready, the GPU clients run", gpuNode("n", nil),
			append(readyAll("n", operand.OperatorValidator), inInit(operand.OperatorValidator, "n", "cuda-validation", 2, 4)),
			&want{code: health.InitWaiting, operand: operand.OperatorValidator, message: "cuda-validation (Init:2/4)", blocked: []string{}}},
		{"device plugin stuck in toolkit-validation though the validator got past it", gpuNode("n", nil),
			append(readyAll("n", operand.OperatorValidator, operand.DevicePlugin), inInit(operand.OperatorValidator, "n", "plugin-validation", 3, 4),
				inInit(operand.DevicePlugin, "n", "toolkit-validation", 0, 2)),
			&want{code: health.InitWaiting, operand: operand.DevicePlugin, blocked: []string{operand.OperatorValidator}}},
		{"validator in cuda-validation, past toolkit-ready: a device plugin in toolkit-validation waits on its own", gpuNode("n", nil),
			append(readyAll("n", operand.OperatorValidator, operand.DevicePlugin), inInit(operand.OperatorValidator, "n", "cuda-validation", 2, 4),
				inInit(operand.DevicePlugin, "n", "toolkit-validation", 0, 2)),
			&want{code: health.InitWaiting, operand: operand.DevicePlugin, blocked: []string{}, also: []string{"init-waiting/operator-validator"}}},
		{"NVML failure: the device plugin ready, no GPU advertised", func() snapshot.Node {
			n := gpuNode("n", nil)
			n.Devices = map[string]snapshot.DeviceCount{snapshot.GPUResource: {}}
			return n
		}(), append(readyAll("n", operand.OperatorValidator), inInit(operand.OperatorValidator, "n", "plugin-validation", 3, 4)),
			&want{code: health.GPUsNotAdvertised, operand: operand.DevicePlugin, blocked: []string{operand.OperatorValidator},
				message: "no allocatable nvidia.com/gpu (capacity 0) nor MIG device"}},
		{"no device in the status at all", func() snapshot.Node { n := gpuNode("n", nil); n.Devices = nil; return n }(), readyAll("n"),
			&want{code: health.GPUsNotAdvertised, operand: operand.DevicePlugin, blocked: []string{}}},
		{"one unhealthy GPU of 8", func() snapshot.Node {
			n := gpuNode("n", nil)
			n.Devices[snapshot.GPUResource] = snapshot.DeviceCount{Capacity: 8, Allocatable: 7}
			return n
		}(), readyAll("n"), &want{code: health.GPUsUnhealthy, operand: operand.DevicePlugin, blocked: []string{},
			message: "7 of 8 nvidia.com/gpu allocatable: 1 unhealthy"}},
		{"GFD counts more GPUs than the device plugin advertises", func() snapshot.Node {
			n := gpuNode("n", nil)
			n.Devices[snapshot.GPUResource] = snapshot.DeviceCount{Capacity: 7, Allocatable: 7}
			return n
		}(), readyAll("n"), &want{code: health.GPUsUnhealthy, operand: operand.DevicePlugin, blocked: []string{},
			message: "GFD counts 8 GPUs, the device plugin advertises 7"}},
		{"MIG change in progress: the GPU clients paused", migPaused("n", 10*time.Minute),
			append(readyAll("n", operand.MIGChange.Operands...), ready(operand.MIGManager, "n")),
			&want{code: health.Paused, operand: operand.DevicePlugin, message: "paused-for-mig-change: paused by the MIG manager while it repartitions the GPUs, since 2026-08-01T11:50:00Z (10m0s)",
				blocked: []string{operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM}}},
		{"MIG change past stuck-after", migPaused("n", 2*time.Hour),
			append(readyAll("n", operand.MIGChange.Operands...), ready(operand.MIGManager, "n")),
			&want{code: health.Stuck, operand: operand.DevicePlugin, message: "(2h0m0s), longer than 30m0s",
				blocked: []string{operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM}}},
		{"node NotReady", func() snapshot.Node { n := gpuNode("n", nil); n.Ready = false; return n }(), readyAll("n"),
			&want{code: health.NodeNotReady, blocked: []string{operand.Driver, operand.ContainerToolkit, operand.DevicePlugin,
				operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM, operand.OperatorValidator}}},
		{"GFD asked, no pod", gpuNode("n", nil), readyAll("n", operand.GPUFeatureDiscovery),
			&want{code: health.Missing, operand: operand.GPUFeatureDiscovery, blocked: []string{},
				message: "no pod of DaemonSet gpu-feature-discovery on the node"}},
		{"only a pod being deleted", gpuNode("n", nil), append(readyAll("n", operand.DCGM), func() snapshot.Pod {
			p := ready(operand.DCGM, "n")
			p.Deleting = true
			return p
		}()), &want{code: health.Missing, operand: operand.DCGM, blocked: []string{}, message: "being deleted"}},
		{"image pull failing", gpuNode("n", nil), append(readyAll("n", operand.DCGMExporter),
			pod(operand.DCGMExporter, "n", snapshot.PodHealth{Container: "nvidia-dcgm-exporter", State: "ImagePullBackOff"}, corev1.PodPending)),
			&want{code: health.ContainerWaiting, operand: operand.DCGMExporter, blocked: []string{}, message: "waits: ImagePullBackOff"}},
		{"unschedulable pod", gpuNode("n", nil), append(readyAll("n", operand.DCGMExporter), func() snapshot.Pod {
			p := pod(operand.DCGMExporter, "n", snapshot.PodHealth{}, corev1.PodPending)
			p.Node, p.Target, p.Reason = "", "n", "0/1 nodes are available: 1 Insufficient memory."
			return p
		}()), &want{code: health.NotRunning, operand: operand.DCGMExporter, blocked: []string{}, message: "is Pending: 0/1 nodes are available"}},
		{"restarted after OOMKilled, not ready", gpuNode("n", nil), append(readyAll("n", operand.DCGM),
			pod(operand.DCGM, "n", snapshot.PodHealth{Container: "nvidia-dcgm-ctr", State: "Running", LastState: "OOMKilled", Restarts: 3}, corev1.PodRunning)),
			&want{code: health.CrashLoop, operand: operand.DCGM, blocked: []string{}, message: "failed and is not ready after 3 restarts, last terminated: OOMKilled"}},
		{"order: the device plugin runs without a toolkit the node does not ask for",
			gpuNode("n", map[string]string{deploy(operand.ContainerToolkit): "", deploy(operand.OperatorValidator): ""}),
			readyAll("n", operand.ContainerToolkit, operand.OperatorValidator),
			&want{code: health.Order, operand: operand.DevicePlugin, blocked: []string{}, message: "(device-plugin-without-toolkit)",
				also: []string{"order/gpu-feature-discovery", "order/dcgm-exporter", "order/dcgm"}}},
		{"a missing pod is a cause of its own, not blocked by a failing toolkit", gpuNode("n", nil),
			append(readyAll("n", operand.ContainerToolkit, operand.DevicePlugin, operand.GPUFeatureDiscovery),
				crashLoop(operand.ContainerToolkit, "n", "nvidia-container-toolkit-ctr"), inInit(operand.DevicePlugin, "n", "toolkit-validation", 0, 2)),
			&want{code: health.CrashLoop, operand: operand.ContainerToolkit, blocked: []string{operand.DevicePlugin},
				also: []string{"missing/gpu-feature-discovery"}}},
		{"two failures on their own: the earlier is the cause", gpuNode("n", nil),
			append(readyAll("n", operand.GPUFeatureDiscovery, operand.DCGMExporter), crashLoop(operand.DCGMExporter, "n", "nvidia-dcgm-exporter")),
			&want{code: health.Missing, operand: operand.GPUFeatureDiscovery, blocked: []string{}, also: []string{"crash-loop/dcgm-exporter"}}},
		{"CPU node: not judged", snapshot.Node{Name: "n", Ready: true, Labels: map[string]string{"kubernetes.io/os": "linux"}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{tc.node}, Pods: tc.pods}
			got := health.Assess(s, operand.Real, now, stuckAfter)
			if len(got) != 1 {
				t.Fatalf("%d verdicts, want 1", len(got))
			}
			checkVerdict(t, got[0], tc.node, tc.want)
		})
	}
}

// checkVerdict: v is usable (want nil), or unusable for want's cause, with
// what it blocks, its other causes and an evidence line for each.
func checkVerdict(t *testing.T, v health.Node, node snapshot.Node, want *want) {
	t.Helper()
	if want == nil {
		if !v.Usable || v.Cause != nil || len(v.Blocked) != 0 || len(v.Also) != 0 || len(v.Evidence) != 0 {
			t.Fatalf("want usable, got %+v (cause %+v)", v, v.Cause)
		}
		if judged := node.Labels[operand.GPUPresent] == "true"; v.Judged != judged {
			t.Errorf("judged %v, want %v", v.Judged, judged)
		}
		return
	}
	if v.Usable || !v.Judged || v.Cause == nil {
		t.Fatalf("want unusable, got %+v", v)
	}
	if v.Cause.Code != want.code || v.Cause.Operand != want.operand || !strings.Contains(v.Cause.Message, want.message) {
		t.Errorf("cause %+v, want %s/%s with %q", *v.Cause, want.code, want.operand, want.message)
	}
	if !reflect.DeepEqual(v.Blocked, want.blocked) {
		t.Errorf("blocked %q, want %q", v.Blocked, want.blocked)
	}
	var also []string
	for _, c := range v.Also {
		also = append(also, c.Code+"/"+c.Operand)
	}
	if !reflect.DeepEqual(also, want.also) {
		t.Errorf("also %q, want %q", also, want.also)
	}
	if want.code != health.NodeNotReady && len(v.Evidence) != 1+len(v.Blocked)+len(v.Also) {
		t.Errorf("evidence %q: want a line for the cause and each blocked and other cause", v.Evidence)
	}
}

func TestEvidence(t *testing.T) {
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: append(readyAll("n", operand.Driver, operand.ContainerToolkit),
		crashLoop(operand.Driver, "n", "nvidia-driver-ctr"), inInit(operand.ContainerToolkit, "n", "driver-validation", 0, 1))}
	got := health.Assess(s, operand.Real, now, stuckAfter)[0].Evidence
	want := []string{
		"driver: pod nvidia-driver-daemonset-n Running, container nvidia-driver-ctr CrashLoopBackOff, 7 restarts, last terminated Error, not Ready for 20m0s",
		"container-toolkit: pod nvidia-container-toolkit-daemonset-n Pending, in init container driver-validation (Init:0/1) for 10m0s",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("evidence\n got %q\nwant %q", got, want)
	}
}

// A node is assessed the same from a snapshot of the cluster and of that
// node alone (what the live tracker reads).
func TestAssessOneNodeAsInTheCluster(t *testing.T) {
	full := &snapshot.Snapshot{}
	nodes := []snapshot.Node{gpuNode("n-10", nil), gpuNode("n-2", map[string]string{deploy(operand.Driver): "pre-installed"}),
		migPaused("n-3", time.Hour), {Name: "cpu", Ready: true}}
	full.Nodes = nodes
	full.Pods = append(full.Pods, crashLoop(operand.Driver, "n-10", "nvidia-driver-ctr"), inInit(operand.ContainerToolkit, "n-10", "driver-validation", 0, 1))
	full.Pods = append(full.Pods, readyAll("n-2", operand.Driver)...)
	full.Pods = append(full.Pods, readyAll("n-3", operand.MIGChange.Operands...)...)
	all := health.Assess(full, operand.Real, now, stuckAfter)
	var order []string
	for _, v := range all {
		order = append(order, v.Node)
	}
	if fmt.Sprint(order) != "[cpu n-2 n-3 n-10]" {
		t.Errorf("order %v, want natural order", order)
	}
	for _, v := range all {
		one := &snapshot.Snapshot{Nodes: []snapshot.Node{nodeNamed(nodes, v.Node)}}
		for _, p := range full.Pods {
			if p.Placement() == v.Node {
				one.Pods = append(one.Pods, p)
			}
		}
		if got := health.Assess(one, operand.Real, now, stuckAfter); !reflect.DeepEqual(got, []health.Node{v}) {
			t.Errorf("node %s alone: %+v, in the cluster %+v", v.Node, got, v)
		}
	}
}

func nodeNamed(nodes []snapshot.Node, name string) snapshot.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	panic(name)
}

// The lab's roster lacks the validator: the GPU clients' toolkit-validation
// then waits for no one the cluster runs, and the chain still holds.
func TestLabRoster(t *testing.T) {
	n := gpuNode("n", map[string]string{deploy(operand.OperatorValidator): "", deploy(operand.DCGM): ""})
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{n}, Pods: []snapshot.Pod{
		ready(operand.Driver, "n"), crashLoop(operand.ContainerToolkit, "n", "nvidia-container-toolkit-ctr"),
		inInit(operand.DevicePlugin, "n", "toolkit-validation", 0, 2), ready(operand.GPUFeatureDiscovery, "n"), ready(operand.DCGMExporter, "n"),
	}}
	v := health.Assess(s, operand.Lab, now, stuckAfter)[0]
	if v.Cause == nil || v.Cause.Operand != operand.ContainerToolkit || !reflect.DeepEqual(v.Blocked, []string{operand.DevicePlugin}) {
		t.Errorf("got cause %+v blocked %q, want container-toolkit blocking device-plugin", v.Cause, v.Blocked)
	}
}

// A failed driver upgrade, or one held in a state too long, is the driver's
// failure, whatever the driver pod shows; a
// host-provided driver is never upgrading.
func TestUpgradeIsTheDriversCause(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	roster := operand.Lab
	ready := func(o operand.Operand, node string) snapshot.Pod {
		return snapshot.Pod{Name: o.DaemonSet + "-" + node, Node: node, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning, Health: snapshot.PodHealth{Ready: true}}
	}
	for _, tc := range []struct {
		name, state, driver string
		since               time.Duration
		code                string
	}{
		{"failed", "upgrade-failed", "true", time.Minute, health.UpgradeFailed},
		{"stuck", "pod-restart-required", "true", 2 * time.Hour, health.UpgradeStuck},
		{"moving", "pod-restart-required", "true", 10 * time.Minute, ""},
		{"required", "upgrade-required", "true", 3 * time.Hour, ""},
		{"host driver", "upgrade-failed", "pre-installed", time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := snapshot.Node{Name: "n", Ready: true, Labels: map[string]string{operand.GPUPresent: "true", operand.UpgradeStateLabel: tc.state},
				LabelChanges: map[string]snapshot.LabelChange{operand.UpgradeStateLabel: {Manager: "gpu-operator", Time: now.Add(-tc.since)}},
				Devices:      map[string]snapshot.DeviceCount{"nvidia.com/gpu": {Capacity: 8, Allocatable: 8}}}
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{n}}
			for _, o := range roster {
				v := "true"
				if o.Name == operand.Driver {
					v = tc.driver
				}
				n.Labels[o.LabelKey()] = v
				if v == "true" {
					s.Pods = append(s.Pods, ready(o, "n"))
				}
			}
			got := health.Assess(s, roster, now, time.Hour)[0]
			switch {
			case tc.code == "" && !got.Usable:
				t.Errorf("want usable, got %+v", got.Cause)
			case tc.code != "" && (got.Cause == nil || got.Cause.Code != tc.code || got.Cause.Operand != operand.Driver):
				t.Errorf("want %s of the driver, got %+v", tc.code, got.Cause)
			}
		})
	}
}

// A GPU node out of service carries the ledger's entry, usable or not; a
// node in service and a node without a GPU carry none.
func TestOutOfService(t *testing.T) {
	cordoned := gpuNode("cordoned", nil)
	cordoned.Unschedulable, cordoned.Cordon = true, &snapshot.LabelChange{Manager: "kubectl-cordon", Time: now}
	cpu := snapshot.Node{Name: "cpu", Unschedulable: true, Ready: true}
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{cordoned, gpuNode("in-service", nil), cpu}}
	for _, n := range []string{"cordoned", "in-service"} {
		for _, o := range stack {
			s.Pods = append(s.Pods, ready(o, n))
		}
	}
	got := map[string]health.Node{}
	for _, v := range health.Assess(s, operand.Real, now, stuckAfter) {
		got[v.Node] = v
	}
	if e := got["cordoned"].OutOfService; !got["cordoned"].Usable || e == nil || e.Actor != "person" || !e.Cordoned {
		t.Errorf("cordoned GPU node: usable %v, out of service %+v; want usable, cordoned by a person", got["cordoned"].Usable, e)
	}
	if e := got["in-service"].OutOfService; e != nil {
		t.Errorf("a node in service out of service: %+v", e)
	}
	if e := got["cpu"].OutOfService; e != nil {
		t.Errorf("a node without a GPU in the ledger: %+v", e)
	}
}
