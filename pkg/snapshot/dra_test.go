package snapshot_test

import (
	"reflect"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// slice is a ResourceSlice of the driver on the node, in the pool's
// generation of count slices, listing the devices.
func slice(driver, node string, generation, count int64, devices ...resourcev1.Device) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: driver,
		Pool: resourcev1.ResourcePool{Name: node, Generation: generation, ResourceSliceCount: count}, Devices: devices}}
	if node != "" {
		s.Spec.NodeName = &node
	}
	return s
}

func device(name, typ string, taints ...resourcev1.DeviceTaint) resourcev1.Device {
	return resourcev1.Device{Name: name, Taints: taints,
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{snapshot.DeviceTypeAttr: {StringValue: &typ}}}
}

// TestAddSlice folds slices into pools as a DRA consumer reads them: the
// newest generation alone, the driver's node-local slices alone, the taints
// that withhold a device alone.
func TestAddSlice(t *testing.T) {
	const gpu = snapshot.DRADriverName
	xid := resourcev1.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourcev1.DeviceTaintEffectNoSchedule}
	lost := resourcev1.DeviceTaint{Key: "gpu.nvidia.com/gpu-lost", Effect: resourcev1.DeviceTaintEffectNoExecute}
	unmonitored := resourcev1.DeviceTaint{Key: "gpu.nvidia.com/unmonitored", Effect: resourcev1.DeviceTaintEffectNone}
	odd := resourcev1.DeviceTaint{Key: "example.com/future", Effect: "Later"}
	for _, tc := range []struct {
		name   string
		slices []*resourcev1.ResourceSlice
		want   map[string][]snapshot.DevicePool
	}{
		{"one slice, one pool", []*resourcev1.ResourceSlice{slice(gpu, "a", 1, 1, device("gpu-0", "gpu"), device("gpu-1", "vfio"))},
			map[string][]snapshot.DevicePool{"a": {{Name: "a", Generation: 1, SliceCount: 1, Slices: 1, Devices: 2, VFIO: 1}}}},
		{"an older generation is left out, whatever the order", []*resourcev1.ResourceSlice{
			slice(gpu, "a", 1, 2, device("gpu-0", "gpu")), slice(gpu, "a", 2, 2, device("gpu-1", "gpu")), slice(gpu, "a", 1, 2, device("gpu-2", "gpu")),
		}, map[string][]snapshot.DevicePool{"a": {{Name: "a", Generation: 2, SliceCount: 2, Slices: 1, Devices: 1}}}},
		{"taints: NoSchedule and NoExecute kept, None and unknown effects not", []*resourcev1.ResourceSlice{
			slice(gpu, "a", 1, 1, device("gpu-0", "gpu", xid, unmonitored), device("gpu-1", "gpu", lost, odd), device("gpu-2", "gpu", unmonitored)),
		}, map[string][]snapshot.DevicePool{"a": {{Name: "a", Generation: 1, SliceCount: 1, Slices: 1, Devices: 3, Tainted: []snapshot.TaintedDevice{
			{Device: "gpu-0", Key: xid.Key, Value: "79", Effect: "NoSchedule"}, {Device: "gpu-1", Key: lost.Key, Effect: "NoExecute"}}}}}},
		{"another driver's slices, and slices not bound to a node, left out", []*resourcev1.ResourceSlice{
			slice("compute-domain.nvidia.com", "a", 1, 1, device("channel-0", "")), slice(gpu, "", 1, 1, device("gpu-0", "gpu")),
		}, map[string][]snapshot.DevicePool{}},
		{"a slice listing no device (a shared counters slice) counts as a slice", []*resourcev1.ResourceSlice{
			slice(gpu, "a", 1, 2), slice(gpu, "a", 1, 2, device("gpu-0", "gpu")),
		}, map[string][]snapshot.DevicePool{"a": {{Name: "a", Generation: 1, SliceCount: 2, Slices: 2, Devices: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, trimmed := map[string][]snapshot.DevicePool{}, map[string][]snapshot.DevicePool{}
			for _, s := range tc.slices {
				snapshot.AddSlice(got, s)
				// What a watch keeps of a slice folds the same (device
				// attributes besides the type left out).
				whole := s.DeepCopy()
				for i := range whole.Spec.Devices {
					whole.Spec.Devices[i].Attributes["productName"] = resourcev1.DeviceAttribute{StringValue: &s.Spec.Driver}
				}
				spec := snapshot.TrimSlice(whole)
				for _, d := range spec.Devices {
					if _, ok := d.Attributes["productName"]; ok {
						t.Errorf("TrimSlice kept attribute productName of %s", d.Name)
					}
				}
				snapshot.AddSlice(trimmed, &resourcev1.ResourceSlice{Spec: spec})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(trimmed, tc.want) {
				t.Errorf("trimmed: got %+v\nwant %+v", trimmed, tc.want)
			}
		})
	}
}

// TestTrimSliceSharesTypes: devices of one type, in one slice or two, share
// one attribute map, and each keeps its own type.
func TestTrimSliceSharesTypes(t *testing.T) {
	a := snapshot.TrimSlice(slice(snapshot.DRADriverName, "gpu-1", 1, 1, device("gpu-0", "gpu"), device("gpu-1", "gpu"), device("mig-0", "mig")))
	b := snapshot.TrimSlice(slice(snapshot.DRADriverName, "gpu-2", 1, 1, device("gpu-0", "gpu")))
	attrs := func(d resourcev1.Device) uintptr { return reflect.ValueOf(d.Attributes).Pointer() }
	if attrs(a.Devices[0]) != attrs(a.Devices[1]) || attrs(a.Devices[0]) != attrs(b.Devices[0]) || attrs(a.Devices[0]) == attrs(a.Devices[2]) {
		t.Errorf("the gpu devices do not share one map, or share the mig device's")
	}
	for _, d := range append(a.Devices, b.Devices...) {
		if got, want := *d.Attributes[snapshot.DeviceTypeAttr].StringValue, d.Name[:3]; got != want {
			t.Errorf("%s: type %s, want %s", d.Name, got, want)
		}
	}
}
