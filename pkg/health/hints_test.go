package health_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// What the kubelet reports names the host's fault without any log read:
// a failing container's termination message (NVIDIA/gpu-operator#898: the
// runtime hook's StartError), a Warning Event on its pod; a message of no
// known fault names none, and neither changes the verdict.
func TestHintsFromTheKubeletsReports(t *testing.T) {
	mismatch := "failed to create containerd task: ... stderr: nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown"
	crashing := func(message string) snapshot.Pod {
		return pod(operand.Driver, "n", snapshot.PodHealth{Container: "nvidia-driver-ctr", State: "CrashLoopBackOff", LastState: "StartError",
			Restarts: 4, Message: message}, corev1.PodRunning)
	}
	for _, tc := range []struct {
		name     string
		pod      snapshot.Pod
		warnings []snapshot.Warning
		code     string
		from     string
	}{
		{"termination message", crashing(mismatch), nil, signature.DriverLibraryMismatch, signature.FromMessage},
		{"a Warning Event", crashing(""), []snapshot.Warning{{Reason: "Failed", Message: "Error: " + mismatch, Time: now}}, signature.DriverLibraryMismatch, signature.FromEvent},
		{"no known fault", crashing("exit status 1"), []snapshot.Warning{{Reason: "BackOff", Message: "Back-off restarting failed container", Time: now}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: append(readyAll("n", operand.Driver), p),
				Warnings: map[string][]snapshot.Warning{p.Name: tc.warnings}}
			got := assessOne(t, s)
			if got.Usable || got.Cause == nil || got.Cause.Operand != operand.Driver {
				t.Fatalf("verdict %+v cause %+v, want the driver's crash loop", got, got.Cause)
			}
			switch {
			case tc.code == "" && len(got.Hints) > 0:
				t.Errorf("hints %+v of no known fault", got.Hints)
			case tc.code != "" && (len(got.Hints) != 1 || got.Hints[0].Code != tc.code || got.Hints[0].From != tc.from || got.Hints[0].Pod != p.Name):
				t.Errorf("hints %+v, want one %s from the %s of pod %s", got.Hints, tc.code, tc.from, p.Name)
			}
		})
	}
}
