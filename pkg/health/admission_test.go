package health_test

import (
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The kubelet refusing a workload because the device plugin could not
// allocate a GPU it advertises (NVIDIA/k8s-device-plugin#231: a GPU lost)
// is the node's fault; a refusal for want of a free GPU (a full node), one
// from before the plugin became Ready (restarted since), one older than
// AdmissionWithin or of unknown time, and one on another node never are.
func TestAPluginFailingAtAdmissionIsTheNodes(t *testing.T) {
	const lost = "Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 3: nvml: GPU is lost, which is unexpected"
	const full = "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
	for _, tc := range []struct {
		name    string
		message string
		at      time.Time
		node    string
		faulty  bool
	}{
		{"a lost GPU, lately", lost, now.Add(-time.Minute), "n", true},
		{"a full node", full, now.Add(-time.Minute), "n", false},
		{"before the plugin became Ready", lost, now.Add(-8 * time.Minute), "n", false},
		{"longer ago than a controller retries", lost, now.Add(-health.AdmissionWithin - time.Second), "n", false},
		{"at an unknown time", lost, time.Time{}, "n", false},
		{"on another node", lost, now.Add(-time.Minute), "m", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := readyAll("n")
			for i := range pods {
				if tc.name == "before the plugin became Ready" && pods[i].DaemonSet == "nvidia-device-plugin-daemonset" {
					pods[i].Health.ReadySince = now.Add(-5 * time.Minute) // restarted since the refusal
				}
			}
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: pods,
				Rejected: []snapshot.RejectedPod{{Namespace: "ml", Name: "app-x2k4p", Node: tc.node, Message: tc.message, At: tc.at}}}
			got := assessOne(t, s)
			switch {
			case tc.faulty && (got.Usable || got.Cause.Code != health.GPUsUnhealthy || got.Cause.Operand != operand.DevicePlugin):
				t.Errorf("got %+v cause %+v, want unusable: %s %s", got, got.Cause, health.GPUsUnhealthy, operand.DevicePlugin)
			case !tc.faulty && (!got.Usable || len(got.Notes) > 0):
				t.Errorf("got %+v cause %+v, want usable", got, got.Cause)
			}
		})
	}
}
