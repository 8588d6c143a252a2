package read

import (
	"reflect"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestTrimSliceKeepsWhatAddSliceReads proves, over random ResourceSlices,
// that a trimmed slice, decoded into the storage of the one before as the
// read does (reuseSlice), folds into the same pools as the whole one, and
// that a device keeps no attribute but its type.
func TestTrimSliceKeepsWhatAddSliceReads(t *testing.T) {
	vfio, node := snapshot.VFIODeviceType, "node-a"
	var got resourcev1.ResourceSlice
	for seed := range int64(200) {
		var s resourcev1.ResourceSlice
		filler(seed).Fill(&s)
		if seed%2 == 0 { // make sure the branches that matter are taken
			s.Spec.Driver, s.Spec.NodeName = snapshot.DRADriverName, &node
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-0",
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{snapshot.DeviceTypeAttr: {StringValue: &vfio}, "uuid": {StringValue: &node}},
				Taints:     []resourcev1.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourcev1.DeviceTaintEffectNoSchedule}}})
		}
		reuseSlice(&got)
		decodeTrimmed(t, &s, &got, sliceFields, nil)
		want, have := map[string][]snapshot.DevicePool{}, map[string][]snapshot.DevicePool{}
		snapshot.AddSlice(want, &s)
		snapshot.AddSlice(have, &got)
		if !reflect.DeepEqual(want, have) {
			t.Fatalf("seed %d: pools from the trimmed slice\n got %+v\nwant %+v", seed, have, want)
		}
		if seed%2 == 0 && (have[node][0].VFIO == 0 || len(have[node][0].Tainted) == 0) {
			t.Fatalf("seed %d: the vfio device or its taint not read: %+v", seed, have)
		}
		for _, d := range got.Spec.Devices {
			for k := range d.Attributes {
				if k != snapshot.DeviceTypeAttr {
					t.Fatalf("seed %d: attribute %s decoded", seed, k)
				}
			}
		}
	}
}
