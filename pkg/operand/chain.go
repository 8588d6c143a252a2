package operand

// Init is an init container of an operand's pod and the operand it waits
// for, if any: the links of the start-up chain that the health judge
// (pkg/health) walks back to a node's root cause.
type Init struct {
	Operand   string // whose pod runs it
	Container string
	WaitsOn   string // the operand it waits for; empty if none
	// Past, when set, is the init container of WaitsOn's pod that writes the
	// file Container waits for: WaitsOn is far enough once that one has
	// completed. Empty: WaitsOn must be ready.
	Past string
	// When, if set, is the ClusterPolicy field (spec.<When>.enabled, off by
	// default) without which the operator leaves the container out of the pod.
	When string
}

// Inits are the init containers of the operands' DaemonSets in the newest
// release (Release.Inits has each release's), each operand's
// in the order its pod runs them (Upstream: assets/state-*/*daemonset.yaml,
// assets/state-dcgm/0400_dcgm.yml, manifests/state-dra-*/0500_daemonset.yaml;
// the status files are cmd/nvidia-validator's):
//   - driver-validation is nvidia-validator's driver component with
//     WITH_WAIT: it waits for a driver (a driver pod's, or the host's);
//   - the operator validator's toolkit-validation waits for the toolkit and
//     then writes /run/nvidia/validations/toolkit-ready, which the
//     toolkit-validation init container of the device plugin, GFD, DCGM,
//     DCGM exporter and MIG manager waits for; its cuda-validation runs a
//     CUDA workload, and its plugin-validation waits for the device plugin
//     to advertise nvidia.com/gpu;
//   - the sandbox validator's init containers wait for the CC manager, the
//     VFIO manager, the vGPU manager and the vGPU device manager, and write
//     vfio-pci-ready, vgpu-manager-ready and vgpu-devices-ready, which the
//     sandbox device plugins and the vGPU device manager wait for;
//   - the DRA kubelet plugin's driver-validation waits for a driver, the DRA
//     validator's gpu-validation for a GPU the kubelet plugin allocates;
//   - k8s-driver-manager and config-manager-init wait on no operand.
//
// Each validation skips itself where it does not apply (the sandbox ones by
// the node's workload type), so one that waits for an operand the node does
// not ask for holds nothing.
var Inits = []Init{
	{Operand: Driver, Container: "k8s-driver-manager"},
	{Operand: ContainerToolkit, Container: "driver-validation", WaitsOn: Driver},
	{Operand: OperatorValidator, Container: "driver-validation", WaitsOn: Driver},
	{Operand: OperatorValidator, Container: "toolkit-validation", WaitsOn: ContainerToolkit},
	{Operand: OperatorValidator, Container: "cuda-validation"},
	{Operand: OperatorValidator, Container: "plugin-validation", WaitsOn: DevicePlugin},
	{Operand: DevicePlugin, Container: "toolkit-validation", WaitsOn: OperatorValidator, Past: "toolkit-validation"},
	{Operand: DevicePlugin, Container: "config-manager-init"},
	{Operand: GPUFeatureDiscovery, Container: "toolkit-validation", WaitsOn: OperatorValidator, Past: "toolkit-validation"},
	{Operand: GPUFeatureDiscovery, Container: "config-manager-init"},
	{Operand: DCGM, Container: "toolkit-validation", WaitsOn: OperatorValidator, Past: "toolkit-validation"},
	{Operand: DCGMExporter, Container: "toolkit-validation", WaitsOn: OperatorValidator, Past: "toolkit-validation"},
	{Operand: MIGManager, Container: "toolkit-validation", WaitsOn: OperatorValidator, Past: "toolkit-validation"},
	{Operand: VGPUManager, Container: "k8s-driver-manager"},
	{Operand: "vfio-manager", Container: "k8s-driver-manager"},
	{Operand: "sandbox-validator", Container: "cc-manager-validation", WaitsOn: CCManager},
	{Operand: "sandbox-validator", Container: "vfio-pci-validation", WaitsOn: "vfio-manager"},
	{Operand: "sandbox-validator", Container: "vgpu-manager-validation", WaitsOn: VGPUManager},
	{Operand: "sandbox-validator", Container: "vgpu-devices-validation", WaitsOn: VGPUDeviceManager},
	{Operand: VGPUDeviceManager, Container: "vgpu-manager-validation", WaitsOn: "sandbox-validator", Past: "vgpu-manager-validation"},
	{Operand: "sandbox-device-plugin", Container: "vfio-pci-validation", WaitsOn: "sandbox-validator", Past: "vfio-pci-validation"},
	{Operand: "sandbox-device-plugin", Container: "vgpu-devices-validation", WaitsOn: "sandbox-validator", Past: "vgpu-devices-validation"},
	{Operand: "kata-sandbox-device-plugin", Container: "vfio-pci-validation", WaitsOn: "sandbox-validator", Past: "vfio-pci-validation"},
	{Operand: DRADriver, Container: "driver-validation", WaitsOn: Driver},
	{Operand: DRAValidator, Container: "gpu-validation", WaitsOn: DRADriver},
}

// Labels of GPU feature discovery: the model the fleet view groups by, and
// those the health judge compares with what the device plugin advertises.
const (
	GPUProductLabel  = "nvidia.com/gpu.product"  // the GPU model
	GPUCountLabel    = "nvidia.com/gpu.count"    // physical GPUs found
	MIGStrategyLabel = "nvidia.com/mig.strategy" // none, single or mixed
)

// Inits are the init containers of the release's DaemonSets: the newest's,
// with those the release adds where its pods run them.
func (r Release) Inits() []Init {
	out := make([]Init, 0, len(Inits)+3)
	for _, i := range Inits {
		out = append(out, i)
		switch {
		case i.Operand == OperatorValidator && i.Container == "driver-validation":
			// nvidia-validator's nvidia-fs and gdrcopy components with
			// WITH_WAIT wait for the modules the driver pod's nvidia-fs and
			// gdrcopy containers load.
			if r.NVIDIAFSValidation {
				out = append(out, Init{Operand: OperatorValidator, Container: "nvidia-fs-validation", WaitsOn: Driver, When: "gds"})
			}
			if r.GDRCopyValidation {
				out = append(out, Init{Operand: OperatorValidator, Container: "gdrcopy-validation", WaitsOn: Driver, When: "gdrcopy"})
			}
		case i.Operand == GPUFeatureDiscovery && i.Container == "toolkit-validation" && r.IMEXInit:
			out = append(out, Init{Operand: GPUFeatureDiscovery, Container: "gpu-feature-discovery-imex-init",
				WaitsOn: OperatorValidator, Past: "driver-validation"})
		}
	}
	return out
}

// InitsOf lists the operand's init containers in the release, in the order
// its pod runs them.
func (r Release) InitsOf(name string) []Init {
	var out []Init
	for _, i := range r.Inits() {
		if i.Operand == name {
			out = append(out, i)
		}
	}
	return out
}
