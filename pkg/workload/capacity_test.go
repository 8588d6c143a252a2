package workload

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
)

// TestCapacityIsTheHandCount counts a mixed fleet — plain, shared, MIG and
// DRA nodes; full, cordoned, upgrading, tainted, unusable and with
// unhealthy GPUs — and holds it to the count by hand.
func TestCapacityIsTheHandCount(t *testing.T) {
	a100 := func(extra ...string) map[string]string {
		l := map[string]string{operand.GPUProductLabel: "A100", operand.GPUCountLabel: "8"}
		for i := 0; i < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	gpus := func(capacity, allocatable int64) map[string]snapshot.DeviceCount {
		return map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: capacity, Allocatable: allocatable}}
	}
	noSchedule := func(key string) []corev1.Taint {
		return []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}}
	}
	s := &snapshot.Snapshot{
		Nodes: []snapshot.Node{
			{Name: "cpu-0"}, // no GPU: not counted
			{Name: "plain", Labels: a100(), Devices: gpus(8, 8)},
			{Name: "full", Labels: a100(), Devices: gpus(8, 8)},
			{Name: "sick", Labels: a100(), Devices: gpus(8, 6)}, // two GPUs unhealthy: its healthy ones are free
			{Name: "cordoned", Labels: a100(), Devices: gpus(8, 8), Unschedulable: true,
				Cordon: &snapshot.LabelChange{Manager: operand.KubectlManager}},
			{Name: "upgrading", Labels: a100(operand.UpgradeStateLabel, operand.UpgradeCordonRequired), Devices: gpus(8, 8), Unschedulable: true},
			{Name: "sentinel", Labels: a100(), Devices: gpus(8, 8), Taints: noSchedule("nvsentinel.dgxc.nvidia.com/fault"),
				Annotations: map[string]string{operand.NVSentinelAppliedTaints: "fault"}},
			{Name: "dedicated", Labels: a100(), Devices: gpus(8, 8), Taints: noSchedule("team"),
				Tainter: &snapshot.LabelChange{Manager: operand.KubectlManager}},
			{Name: "broken", Labels: a100(), Devices: gpus(8, 8)},
			{Name: "shared", Labels: map[string]string{operand.GPUCountLabel: "2"},
				Devices: map[string]snapshot.DeviceCount{"nvidia.com/gpu.shared": {Capacity: 8, Allocatable: 8}}},
			{Name: "mig", Labels: map[string]string{operand.GPUProductLabel: "H100", operand.GPUCountLabel: "1"},
				Devices: map[string]snapshot.DeviceCount{"nvidia.com/mig-1g.10gb": {Capacity: 3, Allocatable: 3}, "nvidia.com/mig-3g.40gb": {Capacity: 1, Allocatable: 1}, snapshot.GPUResource: {}}},
			{Name: "dra"}, // no GFD label: its devices published are its physical GPUs
		},
		DevicePools: map[string][]snapshot.DevicePool{
			"dra": {{Name: "dra", SliceCount: 1, Slices: 1, Devices: 4, Tainted: []snapshot.TaintedDevice{{Device: "gpu-3", Key: "gpu.nvidia.com/xid", Effect: "NoSchedule"}}}},
		},
	}
	healthOf := map[string]*health.Node{
		"sick":   {Judged: true, Cause: &health.Cause{Code: health.GPUsUnhealthy}},
		"broken": {Judged: true, Cause: &health.Cause{Code: health.Order, Operand: "device-plugin"}},
		"dra":    {Judged: true, Cause: &health.Cause{Code: health.DevicesTainted}},
		"plain":  {Judged: true, Usable: true},
	}
	pod := func(node, resource string, n int64) snapshot.GPUPod {
		return snapshot.GPUPod{Node: node, Phase: corev1.PodRunning, Requests: map[string]int64{resource: n}}
	}
	f := &snapshot.GPUPods{
		Pods: []snapshot.GPUPod{
			pod("plain", snapshot.GPUResource, 2), pod("plain", snapshot.GPUResource, 1),
			pod("full", snapshot.GPUResource, 8), pod("sick", snapshot.GPUResource, 4),
			pod("cordoned", snapshot.GPUResource, 1), pod("shared", "nvidia.com/gpu.shared", 3),
			pod("mig", "nvidia.com/mig-1g.10gb", 1),
			{Phase: corev1.PodPending, Requests: map[string]int64{snapshot.GPUResource: 16}}, // not bound: holds nothing
		},
		Claims: map[string]snapshot.Claim{"ns/a": {Allocated: true, Devices: []string{"dra/gpu-0"}}},
	}
	got := CapacityOf(s, healthOf, f, summary.DefaultGroupBy)
	none := map[string]int64{}
	want := &Capacity{GroupBy: summary.DefaultGroupBy, Pools: []Pool{
		{Name: "A100", Nodes: 8, Physical: 64, Resources: []Resource{{
			Resource: snapshot.GPUResource, Kind: Whole, Nodes: 8, Advertised: 64, Allocatable: 62, Unhealthy: 2,
			Allocated:   2 + 1 + 8 + 4 + 1,
			Free:        5 + 0 + 2 + 8, // plain, full, sick, dedicated
			Stranded:    map[string]int64{StrandedCordoned: 7, StrandedUpgrading: 8, StrandedTainted: 8, StrandedUnusable: 8},
			LargestFree: 8, LargestFreeNode: "dedicated",
		}}},
		{Name: "H100", Nodes: 1, Physical: 1, Resources: []Resource{
			{Resource: "nvidia.com/mig-1g.10gb", Kind: MIG, Nodes: 1, Advertised: 3, Allocatable: 3, Allocated: 1, Free: 2, Stranded: none, LargestFree: 2, LargestFreeNode: "mig"},
			{Resource: "nvidia.com/mig-3g.40gb", Kind: MIG, Nodes: 1, Advertised: 1, Allocatable: 1, Free: 1, Stranded: none, LargestFree: 1, LargestFreeNode: "mig"},
		}},
		{Name: summary.NoGroup, Nodes: 2, Physical: 2 + 4, Resources: []Resource{
			{Resource: snapshot.DRADriverName, Kind: DRA, Nodes: 1, Advertised: 4, Allocatable: 3, Unhealthy: 1, Allocated: 1, Free: 2, Stranded: none, LargestFree: 2, LargestFreeNode: "dra"},
			{Resource: "nvidia.com/gpu.shared", Kind: Shared, Nodes: 1, Advertised: 8, Allocatable: 8, Allocated: 3, Free: 5, Stranded: none, LargestFree: 5, LargestFreeNode: "shared"},
		}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("capacity\n got %+v\nwant %+v", got, want)
	}
	if a := got.Pools[0].Resources[0]; a.Allocatable != a.Allocated+a.Free+a.StrandedTotal() {
		t.Errorf("allocatable %d is not allocated %d + free %d + stranded %d", a.Allocatable, a.Allocated, a.Free, a.StrandedTotal())
	}

	// An incomplete pool's free devices are stranded: the scheduler does
	// not allocate from it.
	s.DevicePools["dra"][0].SliceCount = 2
	dra := CapacityOf(s, healthOf, f, summary.DefaultGroupBy).Pools[2].Resources[0]
	if dra.Free != 0 || !reflect.DeepEqual(dra.Stranded, map[string]int64{StrandedUnusable: 2}) {
		t.Errorf("an incomplete pool: free %d, stranded %v; want 0 and unusable 2", dra.Free, dra.Stranded)
	}
}

func TestStrandingByQuarantine(t *testing.T) {
	n := &snapshot.Node{Name: "q", Unschedulable: true, Cordon: &snapshot.LabelChange{Manager: operand.QuarantineManager},
		Annotations: map[string]string{operand.QuarantineAnnotation: `{"code":"order","operand":"device-plugin","since":"2026-01-01T00:00:00Z"}`}}
	if got := Stranding(n, nil); got != StrandedQuarantined {
		t.Errorf("a node gpuops's quarantine holds: %q, want %q", got, StrandedQuarantined)
	}
}
