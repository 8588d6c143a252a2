package health_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The kubelet's words, as it writes them (kubernetes v1.37.2
// pkg/kubelet/kubelet.go rejectPod, pkg/kubelet/cm/admission/errors.go;
// pkg/kubelet/kuberuntime/kuberuntime_manager.go) around containerd's
// (NVIDIA/gpu-operator#730).
const (
	refusedMessage = "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
	noRuntimeEvent = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured`
)

// refusedWorkload is the validator's plugin workload pod the kubelet
// refused on node for want of a free GPU, as PodFrom reads it.
func refusedWorkload(node string) snapshot.Pod {
	return snapshot.Pod{Name: snapshot.PluginWorkloadPrefix + "x7k2p", Node: node, Phase: corev1.PodFailed,
		StatusReason: snapshot.UnexpectedAdmissionError, Reason: snapshot.UnexpectedAdmissionError + ": " + refusedMessage}
}

// inPluginValidation is the validator's pod in its plugin-validation, as
// it waits for its workload pod, or crash-looping there once it gave up.
func inPluginValidation(node string, crashing bool) snapshot.Pod {
	if crashing {
		return pod(operand.OperatorValidator, node, snapshot.PodHealth{Container: "plugin-validation", State: "CrashLoopBackOff",
			LastState: "Error", Restarts: 3, Init: "plugin-validation", InitDone: 3, InitTotal: 4}, corev1.PodPending)
	}
	return inInit(operand.OperatorValidator, node, "plugin-validation", 3, 4)
}

// busy is the snapshot of a node whose validator waits in plugin-validation
// with its workload pod refused, the pods on it holding held of its 8 GPUs
// (held < 0: the holders were not read).
func busy(crashing bool, held int64) *snapshot.Snapshot {
	pods := append(readyAll("n", operand.OperatorValidator), inPluginValidation("n", crashing), refusedWorkload("n"))
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: pods}
	if held >= 0 {
		s.Holders = map[string]snapshot.Holders{"n": {Devices: map[string]int64{snapshot.GPUResource: held}, Pods: []string{"ml/train-0", "ml/train-1"}}}
	}
	return s
}

func assessOne(t *testing.T, s *snapshot.Snapshot) health.Node {
	t.Helper()
	got := health.Assess(s, operand.Real, now, stuckAfter)
	if len(got) != 1 {
		t.Fatalf("%d verdicts, want 1", len(got))
	}
	return got[0]
}

// TestFullNodeIsUsable: the validator's workload pod refused a GPU on a node
// whose GPUs the pods on it request all is a note, never a cause
// (NVIDIA/gpu-operator#233, #481) — whether the validator still waits for
// the pod or crash-loops after giving up — as is one refused lately, a GPU
// freed since; with a GPU free past the validator's retry, or the holders
// unknown, the refusal is the node's and it stays unusable.
func TestFullNodeIsUsable(t *testing.T) {
	for _, crashing := range []bool{false, true} {
		got := assessOne(t, busy(crashing, 8))
		if !got.Usable || got.Cause != nil || len(got.Notes) != 1 {
			t.Fatalf("crashing=%v: %+v, want usable with one note", crashing, got)
		}
		n := got.Notes[0]
		if n.Code != health.GPUsAllInUse || n.Operand != operand.OperatorValidator ||
			!strings.Contains(n.Message, "request 8 of its 8 allocatable (ml/train-0, ml/train-1)") {
			t.Errorf("crashing=%v: note %+v", crashing, n)
		}
	}
	// A GPU freed since a recent refusal: the validator takes it at its
	// next try.
	recent := busy(true, 7)
	recent.Pods[len(recent.Pods)-1].Health.Started = now.Add(-2 * time.Minute)
	if got := assessOne(t, recent); !got.Usable || len(got.Notes) != 1 ||
		!strings.Contains(got.Notes[0].Message, "refused a nvidia.com/gpu 2m0s ago, none free; the pods on the node request 7 of its 8 allocatable now") {
		t.Errorf("refused 2 minutes ago, a GPU free since: %+v, want usable with a note", got)
	}
	for _, tc := range []struct {
		name    string
		held    int64
		refused time.Duration // ago; 0: unknown
	}{{"a GPU free", 7, 0}, {"a GPU free, refused before the validator's retry", 7, health.RetryWithin + time.Minute}, {"holders not read", -1, 0}} {
		s := busy(false, tc.held)
		if tc.refused > 0 {
			s.Pods[len(s.Pods)-1].Health.Started = now.Add(-tc.refused)
		}
		got := assessOne(t, s)
		if got.Usable || got.Cause.Code != health.InitWaiting || got.Cause.Operand != operand.OperatorValidator || len(got.Notes) != 0 {
			t.Errorf("%s: %+v, want unusable: init-waiting operator-validator", tc.name, got)
		}
		if !strings.Contains(strings.Join(got.Evidence, "\n"), "workload pod "+snapshot.PluginWorkloadPrefix+"x7k2p Failed: UnexpectedAdmissionError: "+refusedMessage) {
			t.Errorf("%s: evidence %q lacks the refused workload pod", tc.name, got.Evidence)
		}
	}
}

// TestFullNodeOnlyInPluginValidation: the refusal excuses the validator only
// where its workload pod is what it waits for; another failure of the
// node stays the cause.
func TestFullNodeOnlyInPluginValidation(t *testing.T) {
	s := busy(false, 8)
	s.Pods[len(s.Pods)-2] = inInit(operand.OperatorValidator, "n", "cuda-validation", 2, 4)
	if got := assessOne(t, s); got.Usable || got.Cause.Code != health.InitWaiting || len(got.Notes) != 0 {
		t.Errorf("in cuda-validation: %+v, want unusable", got)
	}
	s = busy(false, 8)
	s.Pods[0] = crashLoop(operand.Driver, "n", "nvidia-driver-ctr")
	got := assessOne(t, s)
	if got.Usable || got.Cause.Code != health.CrashLoop || got.Cause.Operand != operand.Driver {
		t.Errorf("driver crash-looping too: %+v, want the driver's crash loop", got)
	}
}

// TestRuntimeNotConfigured: the toolkit's pod runs, yet the pods with its
// RuntimeClass cannot get a sandbox (NVIDIA/gpu-operator#432, #549, #730):
// the toolkit is the cause, the validator waiting in its first init
// container and the rest behind it.
func TestRuntimeNotConfigured(t *testing.T) {
	pods := []snapshot.Pod{ready(operand.Driver, "n"), ready(operand.ContainerToolkit, "n"),
		inInit(operand.OperatorValidator, "n", "driver-validation", 0, 4)}
	warnings := map[string][]snapshot.Warning{}
	for _, o := range []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGM, operand.DCGMExporter} {
		pods = append(pods, inInit(o, "n", "toolkit-validation", 0, 1))
	}
	for _, p := range pods[2:] {
		warnings[p.Name] = []snapshot.Warning{{Reason: snapshot.FailedCreatePodSandBox, Message: noRuntimeEvent, Count: 12, Time: now}}
	}
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: pods, Warnings: warnings}
	got := assessOne(t, s)
	if got.Usable || got.Cause.Code != health.RuntimeNotConfigured || got.Cause.Operand != operand.ContainerToolkit {
		t.Fatalf("%+v, want runtime-not-configured container-toolkit", got)
	}
	// In chain order: the validator's whole pod ranks after the operands
	// that wait for its toolkit-validation alone.
	wantBlocked := []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM, operand.OperatorValidator}
	if strings.Join(got.Blocked, ",") != strings.Join(wantBlocked, ",") || len(got.Also) != 0 {
		t.Errorf("blocked %v also %v, want %v and nothing else", got.Blocked, got.Also, wantBlocked)
	}
	if !strings.Contains(got.Cause.Message, `no runtime "nvidia" configured`) ||
		!strings.Contains(got.Evidence[0], "container-toolkit: Warning FailedCreatePodSandBox (x12): "+noRuntimeEvent) {
		t.Errorf("message %q evidence %q", got.Cause.Message, got.Evidence)
	}

	// Without the Events, the validator is what the pods show, as before.
	s.Warnings = nil
	if got := assessOne(t, s); got.Cause.Code != health.InitWaiting || got.Cause.Operand != operand.OperatorValidator {
		t.Errorf("without Events: %+v, want init-waiting operator-validator", got)
	}
}

// TestTerminationMessageIsEvidence: a failing container's termination
// message is part of its link's evidence, on one line.
func TestTerminationMessageIsEvidence(t *testing.T) {
	p := crashLoop(operand.Driver, "n", "nvidia-driver-ctr")
	p.Health.Message = "Could not resolve Linux kernel version\n"
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: append(readyAll("n", operand.Driver), p)}
	got := assessOne(t, s)
	if want := `container nvidia-driver-ctr terminated with message "Could not resolve Linux kernel version"`; !strings.Contains(got.Evidence[0], want) {
		t.Errorf("evidence %q, want it to hold %q", got.Evidence, want)
	}
}

// TestWarningSaidOnce: a Warning whose message the pod's reason already
// holds (the scheduler's FailedScheduling, its PodScheduled condition's
// message) is not said again.
func TestWarningSaidOnce(t *testing.T) {
	const unschedulable = "0/3 nodes are available: 3 Insufficient memory."
	p := pod(operand.Driver, "n", snapshot.PodHealth{}, corev1.PodPending)
	p.Node, p.Target, p.Reason = "", "n", unschedulable
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: append(readyAll("n", operand.Driver), p),
		Warnings: map[string][]snapshot.Warning{p.Name: {{Reason: "FailedScheduling", Message: unschedulable, Time: now}}}}
	got := assessOne(t, s)
	if got.Cause == nil || got.Cause.Code != health.NotRunning || strings.Contains(strings.Join(got.Evidence, "\n"), "FailedScheduling") {
		t.Errorf("cause %+v evidence %q: want not-running, the scheduler's message once", got.Cause, got.Evidence)
	}
}
