package health_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The driver manager's line that the host has a driver excuses the driver
// pod's wait in k8s-driver-manager (NVIDIA/gpu-operator#381) — from its log
// (health --logs), its termination message or an Event on the pod — and
// nothing else: not the line from another container or pod, not a wait
// elsewhere, not a paused driver, not a driver that failed its upgrade, and
// not an operand that fails on its own beside it.
func TestTheHostsDriverExcusesTheDriverManagersWait(t *testing.T) {
	const line = "NVIDIA GPU driver is already pre-installed on the node, will not proceed with the containerized driver installation. This pod can be disabled through 'nvidia.com/gpu.deploy.driver=false' node label."
	found, ok := signature.Match(line)
	if !ok {
		t.Fatal("the driver manager's line matches no entry")
	}
	waiting := inInit(operand.Driver, "n", "k8s-driver-manager", 0, 1)
	exiting := pod(operand.Driver, "n", snapshot.PodHealth{Container: "k8s-driver-manager", State: "CrashLoopBackOff", LastState: "Error",
		Restarts: 3, Init: "k8s-driver-manager", InitTotal: 1}, corev1.PodPending)
	inDriver := crashLoop(operand.Driver, "n", "nvidia-driver-ctr")
	logged := func(p snapshot.Pod, container string) map[string][]signature.Hint {
		return map[string][]signature.Hint{p.Name: {found.Hint(signature.FromLog, p.Name, container, false)}}
	}
	for _, tc := range []struct {
		name     string
		driver   snapshot.Pod
		labels   map[string]string
		logged   func(snapshot.Pod) map[string][]signature.Hint
		warnings func(snapshot.Pod) map[string][]snapshot.Warning
		also     string // an operand failing on its own beside it
		usable   bool
	}{
		{name: "its log, held running (v0.4.0 sleeps)", driver: waiting, usable: true,
			logged: func(p snapshot.Pod) map[string][]signature.Hint { return logged(p, "k8s-driver-manager") }},
		{name: "its log, exiting (v0.4.1 on)", driver: exiting, usable: true,
			logged: func(p snapshot.Pod) map[string][]signature.Hint { return logged(p, "k8s-driver-manager") }},
		{name: "its termination message", usable: true, driver: func() snapshot.Pod {
			p := exiting
			p.Health.Message = line
			return p
		}()},
		{name: "an Event on the pod", driver: waiting, usable: true, warnings: func(p snapshot.Pod) map[string][]snapshot.Warning {
			return map[string][]snapshot.Warning{p.Name: {{Reason: "Waiting", Message: line, Time: now}}}
		}},
		{name: "no such line", driver: waiting},
		{name: "the line, the pod in its driver container", driver: inDriver,
			logged: func(p snapshot.Pod) map[string][]signature.Hint { return logged(p, "nvidia-driver-ctr") }},
		{name: "the line from another container", driver: waiting,
			logged: func(p snapshot.Pod) map[string][]signature.Hint { return logged(p, "nvidia-driver-ctr") }},
		{name: "a failed driver upgrade", driver: waiting, labels: map[string]string{operand.UpgradeStateLabel: operand.UpgradeFailed},
			logged: func(p snapshot.Pod) map[string][]signature.Hint { return logged(p, "k8s-driver-manager") }},
		{name: "the validator failing on its own", driver: waiting, also: operand.OperatorValidator,
			logged: func(p snapshot.Pod) map[string][]signature.Hint { return logged(p, "k8s-driver-manager") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := append(readyAll("n", operand.Driver, tc.also), tc.driver)
			if tc.also != "" {
				pods = append(pods, crashLoop(tc.also, "n", "nvidia-operator-validator"))
			}
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", tc.labels)}, Pods: pods}
			if tc.logged != nil {
				s.Logged = tc.logged(tc.driver)
			}
			if tc.warnings != nil {
				s.Warnings = tc.warnings(tc.driver)
			}
			got := assessOne(t, s)
			switch {
			case tc.usable && (!got.Usable || len(got.Notes) != 1 || got.Notes[0].Code != health.DriverOnHost || got.Notes[0].Operand != operand.Driver ||
				len(got.Hints) != 1 || got.Hints[0].Code != signature.DriverPreinstalled):
				t.Errorf("got %+v, want usable with the note %s driver and the hint %s", got, health.DriverOnHost, signature.DriverPreinstalled)
			case tc.usable:
			case tc.also != "" && (got.Usable || got.Cause.Operand != tc.also || len(got.Notes) != 1):
				t.Errorf("got %+v cause %+v, want %s the cause, the driver noted", got, got.Cause, tc.also)
			case tc.also == "" && (got.Usable || got.Cause.Operand != operand.Driver || len(got.Notes) != 0):
				t.Errorf("got %+v cause %+v, want the driver the cause", got, got.Cause)
			}
		})
	}
}
