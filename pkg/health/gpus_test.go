package health_test

import (
	"testing"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestOffered counts what each kind of node was asked to offer and offers,
// in devices a workload asks for.
func TestOffered(t *testing.T) {
	offers := snapshottest.Offers("plugin-configs", "mig-configs")
	node := func(labels map[string]string, devices map[string]int64) snapshot.Node {
		n := snapshot.Node{Name: "n", Labels: labels, Devices: map[string]snapshot.DeviceCount{}}
		for name, k := range devices {
			n.Devices[name] = snapshot.DeviceCount{Capacity: k, Allocatable: k}
		}
		return n
	}
	count8 := map[string]string{operand.GPUCountLabel: "8"}
	with := func(more map[string]string) map[string]string {
		out := map[string]string{operand.GPUCountLabel: "8"}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	mig := func(layout string) map[string]string {
		return with(map[string]string{operand.MIGConfigLabel: layout, operand.MIGChange.StateLabel: operand.MIGSuccess, operand.MIGStrategyLabel: "mixed"})
	}
	xid := snapshot.TaintedDevice{Device: "gpu-1", Key: "gpu.nvidia.com/xid", Value: "79", Effect: "NoSchedule"}
	for _, tc := range []struct {
		name  string
		node  snapshot.Node
		pools []snapshot.DevicePool
		want  health.GPUs
		known bool
	}{
		{"plain", node(count8, map[string]int64{snapshot.GPUResource: 8}), nil, health.GPUs{Asked: 8, Advertised: 8}, true},
		{"no GFD count: the plugin's capacity", node(nil, map[string]int64{snapshot.GPUResource: 8}), nil, health.GPUs{Asked: 8, Advertised: 8}, true},
		{"nothing to tell the ask by", node(nil, nil), nil, health.GPUs{}, false},
		{"time-slicing renamed", node(with(map[string]string{operand.DevicePluginConfigLabel: "ts-renamed"}), map[string]int64{"nvidia.com/gpu.shared": 32}),
			nil, health.GPUs{Asked: 32, Advertised: 32}, true},
		{"time-slicing not applied", node(with(map[string]string{operand.DevicePluginConfigLabel: "ts"}), map[string]int64{snapshot.GPUResource: 8}),
			nil, health.GPUs{Asked: 32, Advertised: 8}, true},
		{"MIG all-1g.10gb, mixed", node(mig("all-1g.10gb"), map[string]int64{"nvidia.com/mig-1g.10gb": 56}), nil, health.GPUs{Asked: 56, Advertised: 56}, true},
		{"MIG disabled", node(mig("all-disabled"), map[string]int64{snapshot.GPUResource: 8}), nil, health.GPUs{Asked: 8, Advertised: 8}, true},
		{"MIG by GPU model: cannot be told", node(mig("all-balanced"), map[string]int64{"nvidia.com/mig-1g.10gb": 16}), nil, health.GPUs{Asked: 8, Advertised: 16}, false},
		{"DRA: a device withheld", node(nil, nil), []snapshot.DevicePool{{Name: "n", Generation: 1, SliceCount: 1, Slices: 1, Devices: 8,
			Tainted: []snapshot.TaintedDevice{xid, xid}}}, health.GPUs{Asked: 8, Advertised: 7}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, known := health.Offered(tc.node, offers, tc.pools)
			if known != tc.known || (known && got != tc.want) {
				t.Errorf("got %+v %v, want %+v %v", got, known, tc.want, tc.known)
			}
		})
	}
}
