package read

import (
	"reflect"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestPoolReaderFoldsWhatAddSliceDoes proves, over random ResourceSlices,
// that the read's way — each slice trimmed and decoded afresh, its devices one by one into one Device from
// its whole bytes — folds into the same pools as AddSlice on the whole
// slice, as does a slice decoded whole (a JSON read); and that a device
// keeps no attribute but its type.
func TestPoolReaderFoldsWhatAddSliceDoes(t *testing.T) {
	vfio, node := snapshot.VFIODeviceType, "node-a"
	want := map[string][]snapshot.DevicePool{}
	proto, json := poolReader{pools: map[string][]snapshot.DevicePool{}}, poolReader{pools: map[string][]snapshot.DevicePool{}}
	for seed := range int64(200) {
		var s resourcev1.ResourceSlice
		filler(seed).Fill(&s)
		if seed%2 == 0 { // make sure the branches that matter are taken
			s.Spec.Driver, s.Spec.NodeName = snapshot.DRADriverName, &node
			s.Spec.Pool.Generation = seed // a newer generation each time: the pool is counted again
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-0",
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{snapshot.DeviceTypeAttr: {StringValue: &vfio}, "uuid": {StringValue: &node}},
				Taints:     []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourcev1.DeviceTaintEffectNoSchedule}}})
		}
		whole, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var got resourcev1.ResourceSlice
		decodeTrimmed(t, &s, &got, sliceFields, nil)
		if len(got.Spec.Devices) != 0 {
			t.Fatalf("seed %d: the slice's devices decoded with it", seed)
		}
		snapshot.AddSlice(want, &s)
		if err := proto.add(&got, whole); err != nil {
			t.Fatal(err)
		}
		if err := json.add(s.DeepCopy(), nil); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, proto.pools) || !reflect.DeepEqual(want, json.pools) {
			t.Fatalf("seed %d: pools\n got %+v\n   as JSON %+v\nwant %+v", seed, proto.pools, json.pools, want)
		}
		if seed%2 == 0 && (want[node][0].VFIO == 0 || len(want[node][0].Tainted) == 0) {
			t.Fatalf("seed %d: the vfio device or its taint not read: %+v", seed, want)
		}
		for k := range proto.device.Attributes {
			if k != snapshot.DeviceTypeAttr {
				t.Fatalf("seed %d: attribute %s decoded", seed, k)
			}
		}
	}
}
