package health_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestAssessOffers covers what a node offers against its sharing config and
// MIG layout: each healthy kind usable, each broken one its cause.
func TestAssessOffers(t *testing.T) {
	const plugin, migCM = "plugin-configs", "mig-configs"
	shared := func(key string, d map[string]snapshot.DeviceCount) snapshot.Node {
		return devices(gpuNode("n", map[string]string{operand.DevicePluginConfigLabel: key}), d)
	}
	gpus := func(name string, n int64) map[string]snapshot.DeviceCount {
		return map[string]snapshot.DeviceCount{name: {Capacity: n, Allocatable: n}}
	}
	// mig is a node with the MIG manager asked for and a layout applied
	// (state as given), under a strategy, advertising d.
	mig := func(layout, state, strategy string, set map[string]string, d map[string]snapshot.DeviceCount) snapshot.Node {
		labels := map[string]string{deploy(operand.MIGManager): "true", operand.MIGConfigLabel: layout,
			operand.MIGChange.StateLabel: state, operand.MIGStrategyLabel: strategy}
		for k, v := range set {
			labels[k] = v
		}
		return devices(gpuNode("n", labels), d)
	}
	mpsDaemon := func(h snapshot.PodHealth) snapshot.Pod {
		return snapshot.Pod{Name: operand.MPSDaemonSet + "-n", Node: "n", DaemonSet: operand.MPSDaemonSet, Phase: corev1.PodRunning, Health: h}
	}
	readyMPS := mpsDaemon(snapshot.PodHealth{Ready: true})
	withMIG := append(readyAll("n"), ready(operand.MIGManager, "n"))
	stuck := func() snapshot.Node {
		n := migPaused("n", 2*time.Hour)
		n.Labels[operand.MIGConfigLabel], n.Labels[operand.MIGChange.StateLabel] = "all-1g.10gb", operand.MIGPending
		n.LabelChanges[operand.MIGChange.StateLabel] = snapshot.LabelChange{Manager: operand.MIGChange.Manager, Time: now.Add(-2 * time.Hour)}
		return n
	}
	for _, tc := range []struct {
		name string
		node snapshot.Node
		pods []snapshot.Pod
		want *want
	}{
		{"time-slicing renamed: 32 nvidia.com/gpu.shared", shared("ts-renamed", gpus("nvidia.com/gpu.shared", 32)), readyAll("n"), nil},
		{"time-slicing: 32 nvidia.com/gpu", shared("ts", gpus(snapshot.GPUResource, 32)), readyAll("n"), nil},
		{"MPS with its daemon ready", shared("mps", gpus(snapshot.GPUResource, 32)), append(readyAll("n"), readyMPS), nil},
		{"renameByDefault under flags (#1433): not renamed, as the device plugin does",
			shared("flags-rename", gpus(snapshot.GPUResource, 32)), readyAll("n"), nil},
		{"no config label: no sharing asked", shared("", gpus(snapshot.GPUResource, 8)), readyAll("n"), nil},
		{"sharing not applied: the physical count advertised", shared("ts", gpus(snapshot.GPUResource, 8)), readyAll("n"),
			&want{code: health.SharingNotApplied, operand: operand.DevicePlugin, blocked: []string{},
				message: "config ts of ConfigMap plugin-configs (label nvidia.com/device-plugin.config) asks time-slicing of nvidia.com/gpu, 4 replicas each: 32 nvidia.com/gpu for 8; the node advertises 8 nvidia.com/gpu"}},
		{"renamed sharing not applied", shared("ts-renamed", gpus(snapshot.GPUResource, 8)), readyAll("n"),
			&want{code: health.SharingNotApplied, operand: operand.DevicePlugin, blocked: []string{},
				message: "32 nvidia.com/gpu.shared for 8; the node advertises 0 nvidia.com/gpu.shared"}},
		{"config label names a key the ConfigMap lacks: the config manager's crash loop explained",
			shared("a100-shared", gpus(snapshot.GPUResource, 8)), append(readyAll("n", operand.DevicePlugin), crashLoop(operand.DevicePlugin, "n", "config-manager")),
			&want{code: health.SharingConfigUnknown, operand: operand.DevicePlugin, blocked: []string{},
				message: "label nvidia.com/device-plugin.config=a100-shared names a config ConfigMap plugin-configs lacks (it has flags-rename, mps, ts, ts-renamed)"}},
		{"MPS asked, its daemon crash-looping", shared("mps", gpus(snapshot.GPUResource, 32)),
			append(readyAll("n"), mpsDaemon(snapshot.PodHealth{Container: "mps-control-daemon-ctr", State: "CrashLoopBackOff", Restarts: 4})),
			&want{code: health.MPSDaemonNotReady, operand: operand.DevicePlugin, blocked: []string{},
				message: "shares by MPS: pod nvidia-device-plugin-mps-control-daemon-n of DaemonSet nvidia-device-plugin-mps-control-daemon is not running and ready"}},
		{"MPS asked, no daemon", shared("mps", gpus(snapshot.GPUResource, 32)), readyAll("n"),
			&want{code: health.MPSDaemonNotReady, operand: operand.DevicePlugin, blocked: []string{},
				message: `no pod of DaemonSet nvidia-device-plugin-mps-control-daemon on the node (it runs where nvidia.com/mps.capable=true; here "")`}},

		{"MIG mixed all-1g.10gb: 56 devices on 8 GPUs", mig("all-1g.10gb", operand.MIGSuccess, "mixed", nil,
			map[string]snapshot.DeviceCount{snapshot.GPUResource: {}, "nvidia.com/mig-1g.10gb": {Capacity: 56, Allocatable: 56}}), withMIG, nil},
		{"MIG single all-1g.10gb: 56 nvidia.com/gpu", mig("all-1g.10gb", operand.MIGSuccess, "single",
			map[string]string{operand.GPUProductLabel: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", operand.GPUCountLabel: "56"},
			gpus(snapshot.GPUResource, 56)), withMIG, nil},
		{"MIG mixed, a layout of the GPU model's variant", mig("all-balanced", operand.MIGSuccess, "mixed", nil,
			map[string]snapshot.DeviceCount{"nvidia.com/mig-1g.20gb": {Capacity: 16, Allocatable: 16},
				"nvidia.com/mig-2g.40gb": {Capacity: 8, Allocatable: 8}, "nvidia.com/mig-3g.80gb": {Capacity: 8, Allocatable: 8}}), withMIG, nil},
		{"MIG disabled", mig("all-disabled", operand.MIGSuccess, "mixed", nil, gpus(snapshot.GPUResource, 8)), withMIG, nil},
		{"MIG mixed, half the layout advertised", mig("all-1g.10gb", operand.MIGSuccess, "mixed", nil, gpus("nvidia.com/mig-1g.10gb", 28)), withMIG,
			&want{code: health.MIGLayoutMismatch, operand: operand.MIGManager, blocked: []string{},
				message: "layout all-1g.10gb of ConfigMap mig-configs asks, for 8 GPUs under the mixed strategy, 56 nvidia.com/mig-1g.10gb; the node advertises 28 nvidia.com/mig-1g.10gb"}},
		{"MIG single, GPUs of another profile", mig("all-1g.10gb", operand.MIGSuccess, "single",
			map[string]string{operand.GPUProductLabel: "NVIDIA-A100-SXM4-80GB-MIG-2g.20gb", operand.GPUCountLabel: "24"},
			gpus(snapshot.GPUResource, 24)), withMIG,
			&want{code: health.MIGLayoutMismatch, operand: operand.MIGManager, blocked: []string{},
				message: "asks MIG devices 1g.10gb under the single strategy; GFD labels the GPUs nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-MIG-2g.20gb"}},
		{"MIG config names a layout the ConfigMap lacks", mig("all-3g.40gb", operand.MIGFailed, "mixed", nil, gpus(snapshot.GPUResource, 8)), withMIG,
			&want{code: health.MIGConfigUnknown, operand: operand.MIGManager, blocked: []string{},
				message: "label nvidia.com/mig.config=all-3g.40gb names a layout ConfigMap mig-configs lacks (it has all-1g.10gb, all-balanced, all-disabled)"}},
		{"MIG state failed", mig("all-1g.10gb", operand.MIGFailed, "mixed", nil, gpus(snapshot.GPUResource, 8)), withMIG,
			&want{code: health.MIGFailed, operand: operand.MIGManager, blocked: []string{},
				message: "the MIG manager failed to apply layout all-1g.10gb (label nvidia.com/mig.config.state=failed)"}},
		{"MIG change stuck in pending: one cause, the paused operands behind it", stuck(),
			append(readyAll("n", operand.MIGChange.Operands...), ready(operand.MIGManager, "n")),
			&want{code: health.MIGStuck, operand: operand.MIGManager,
				blocked: []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM},
				message: "the MIG manager has been applying layout all-1g.10gb (pending) since 2026-08-01T10:00:00Z (2h0m0s), longer than 30m0s; left paused-for-mig-change: " +
					"nvidia.com/gpu.deploy.device-plugin, nvidia.com/gpu.deploy.gpu-feature-discovery, nvidia.com/gpu.deploy.dcgm-exporter, nvidia.com/gpu.deploy.dcgm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{tc.node}, Pods: tc.pods, Offers: snapshottest.Offers(plugin, migCM)}
			checkVerdict(t, health.Assess(s, operand.Real, now, stuckAfter)[0], tc.node, tc.want)
		})
	}
}
