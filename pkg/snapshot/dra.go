package snapshot

import (
	"slices"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The DRA stack of a GPUCluster offers a node's GPUs as devices in
// resource.k8s.io/v1 ResourceSlices, not in the node's allocatable: its
// kubelet plugin publishes one pool per node, named after the node, under
// driver gpu.nvidia.com (kubernetes-sigs/dra-driver-nvidia-gpu at 95932046,
// cmd/gpu-kubelet-plugin/driver.go publishResources and
// GenerateDriverResources). Each device says what it is in its attribute
// "type": gpu, mig, or vfio for a GPU bound to vfio-pci
// (cmd/gpu-kubelet-plugin/types.go, deviceinfo.go).
const (
	DRADriverName  = "gpu.nvidia.com"
	DeviceTypeAttr = "type"
	VFIODeviceType = "vfio"
)

// DevicePool is what a judge needs of one pool of the DRA driver's devices
// on a node: of the pool's newest generation (consumers go by the highest
// generation alone, resource.k8s.io/v1 ResourcePool), how many slices make
// it and how many of them are published, the devices they list and those
// tainted.
type DevicePool struct {
	Name       string
	Generation int64
	SliceCount int64 // spec.pool.resourceSliceCount: the slices the pool is made of
	Slices     int64 // the slices of that generation published
	Devices    int   // devices listed in them
	VFIO       int   // of which type vfio
	// Tainted are the devices' taints that keep them from new claims
	// (withholds), one entry per device and taint.
	Tainted []TaintedDevice
}

// Complete reports whether every slice of the pool's generation is
// published: until then its devices are not all known (not "no devices").
func (p DevicePool) Complete() bool { return p.Slices >= p.SliceCount }

// TaintedDevice is a device and one taint on it. The kubelet plugin's health
// monitor taints gpu.nvidia.com/xid (value the XID; NoSchedule when fatal,
// None otherwise), gpu.nvidia.com/gpu-lost (NoSchedule) and
// gpu.nvidia.com/unmonitored (None) (cmd/gpu-kubelet-plugin/device_health.go).
type TaintedDevice struct {
	Device string `json:"device"`
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// withholds reports whether a taint keeps its device from new claims:
// NoSchedule or NoExecute. None is informational, and an unknown effect is
// to be read as None (k8s.io/api v0.37 resource/v1 DeviceTaint.Effect).
func withholds(e resourcev1.DeviceTaintEffect) bool {
	return e == resourcev1.DeviceTaintEffectNoSchedule || e == resourcev1.DeviceTaintEffectNoExecute
}

// RunsDRA reports whether one of the DaemonSets runs the DRA kubelet plugin
// as the operator deploys it (selects its deploy label; gpu-operator v26.7.0
// manifests/state-dra-driver, in the operator's namespace). The driver's
// slices are read whether or not it does: before v26.7.0 the operator does
// not deploy the driver, and its own chart installs it in a namespace of
// its own, with no deploy label (kubernetes-sigs/dra-driver-nvidia-gpu at
// 95932046, site/content/docs/install.md: --namespace
// dra-driver-nvidia-gpu; deployments/helm/dra-driver-nvidia-gpu/templates/kubeletplugin.yaml).
// Only where it does is a slice the read could not list a loss worth a
// note.
func RunsDRA(daemonSets []DaemonSet) bool {
	return slices.ContainsFunc(daemonSets, func(d DaemonSet) bool {
		return slices.Contains(d.SelectorLabels(), operand.LabelPrefix+operand.DRADriver)
	})
}

// TrimSlice is what AddSlice reads of a ResourceSlice, and nothing else:
// its driver, node and pool, and of each device its name, type and
// taints, not its capacities, counters and other attributes (most of a
// slice). A watch keeps slices trimmed so.
func TrimSlice(s *resourcev1.ResourceSlice) resourcev1.ResourceSliceSpec {
	out := resourcev1.ResourceSliceSpec{Driver: s.Spec.Driver, NodeName: s.Spec.NodeName, Pool: s.Spec.Pool}
	out.Devices = make([]resourcev1.Device, 0, len(s.Spec.Devices))
	for _, d := range s.Spec.Devices {
		dev := resourcev1.Device{Name: d.Name, Taints: d.Taints}
		if t, ok := d.Attributes[DeviceTypeAttr]; ok {
			dev.Attributes = typeAttribute(t)
		}
		out.Devices = append(out.Devices, dev)
	}
	return out
}

// typeAttributes are the attribute maps TrimSlice gives devices, one per
// device type, which the devices of that type share (nothing writes to
// them): a map each was most of what a watch held of the slices, and a
// fleet has a few types. Types past maxTypes get maps of their own.
var typeAttributes = struct {
	sync.Mutex
	m map[string]map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
}{m: map[string]map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}}

const maxTypes = 64

func typeAttribute(t resourcev1.DeviceAttribute) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	if t.StringValue == nil || t.IntValue != nil || t.BoolValue != nil || t.VersionValue != nil {
		return map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{DeviceTypeAttr: t} // not a type's name
	}
	typeAttributes.Lock()
	defer typeAttributes.Unlock()
	if m, ok := typeAttributes.m[*t.StringValue]; ok {
		return m
	}
	own := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{DeviceTypeAttr: t}
	if len(typeAttributes.m) < maxTypes {
		typeAttributes.m[*t.StringValue] = own
	}
	return own
}

// AddSlice folds one ResourceSlice of the DRA driver into pools, by node: a
// slice of a newer generation than the pool's replaces what was counted, an
// older one is left out. Slices not bound to one node (a selector, all
// nodes) are not the kubelet plugin's and are left out too.
func AddSlice(pools map[string][]DevicePool, s *resourcev1.ResourceSlice) {
	if p := SlicePool(pools, &s.Spec); p != nil {
		for i := range s.Spec.Devices {
			p.AddDevice(&s.Spec.Devices[i])
		}
	}
}

// SlicePool is AddSlice's first step: it counts a slice, of spec, in its
// pool and returns the pool its devices are added to (AddDevice), or nil
// when the slice is left out. It reads no device: a read may decode them
// one by one into one Device. The pool is valid until the next call.
func SlicePool(pools map[string][]DevicePool, spec *resourcev1.ResourceSliceSpec) *DevicePool {
	if spec.Driver != DRADriverName || spec.NodeName == nil {
		return nil
	}
	node, p := *spec.NodeName, spec.Pool
	list := pools[node]
	i := slices.IndexFunc(list, func(d DevicePool) bool { return d.Name == p.Name })
	if i < 0 {
		list = append(list, DevicePool{Name: p.Name, Generation: p.Generation})
		pools[node] = list
		i = len(list) - 1
	}
	d := &list[i]
	switch {
	case p.Generation < d.Generation:
		return nil
	case p.Generation > d.Generation:
		*d = DevicePool{Name: p.Name, Generation: p.Generation}
	}
	d.SliceCount = p.ResourceSliceCount
	d.Slices++
	return d
}

// AddDevice counts one device of a slice SlicePool returned the pool of,
// keeping nothing of dev.
func (d *DevicePool) AddDevice(dev *resourcev1.Device) {
	d.Devices++
	if t := dev.Attributes[DeviceTypeAttr].StringValue; t != nil && *t == VFIODeviceType {
		d.VFIO++
	}
	for _, t := range dev.Taints {
		if withholds(t.Effect) {
			d.Tainted = append(d.Tainted, TaintedDevice{Device: dev.Name, Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
	}
}
