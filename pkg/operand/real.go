package operand

// Upstream names the sources the catalog was read from: the operands, their
// DaemonSets and start-up order (NVIDIA/gpu-operator assets/state-*/,
// manifests/state-*/, controllers/state_manager.go, api/nvidia/v1), and the
// helpers that write deploy label values (labels.go).
const Upstream = "NVIDIA/gpu-operator v26.7.0, k8s-driver-manager v0.12.0, mig-parted v0.15.0, vgpu-device-manager v0.5.0"

// Real is every operand of a GPU Operator v26.7 install beyond the lab's
// five, with the DaemonSet the operator renders for each, in its start-up
// order. --discover takes a cluster's operands from its live DaemonSets; this
// list gives known ones their usual DaemonSet, column and place.
//
// The DaemonSets that run one operand under other names (found by
// --discover, kept as Variants) are, upstream:
//   - driver: nvidia-driver-daemonset-<kernel>-<os> (precompiled drivers, one per
//     kernel, pod label app=nvidia-driver-daemonset unchanged),
//     nvidia-driver-daemonset-<rhcos> (OpenShift driver toolkit) and
//     nvidia-<gpu|vgpu>-driver-<os>-<hash> (one per node pool of an NVIDIADriver,
//     internal/state/driver.go getDriverAppName).
//   - vgpu-manager: nvidia-vgpu-host-manager-driver-<os>-<hash> (an NVIDIADriver
//     of driverType vgpu-host-manager; it selects deploy.vgpu-manager).
//
// The ClusterPolicy stack (state-*) and the DRA stack of a GPUCluster
// (manifests/state-dra-*, the -dra DCGM pair) never run together: the
// operator refuses both objects at once and sweeps the other stack's deploy
// labels off every node.
var Real = append(Lab[:len(Lab):len(Lab)],
	Operand{Name: OperatorValidator, DaemonSet: "nvidia-operator-validator", Column: "validator"},
	Operand{Name: DCGM, DaemonSet: "nvidia-dcgm", Column: "dcgm-hostengine"},
	Operand{Name: MIGManager, DaemonSet: "nvidia-mig-manager", Column: "mig-manager"},
	Operand{Name: "node-status-exporter", DaemonSet: "nvidia-node-status-exporter", Column: "node-status"},
	Operand{Name: VGPUManager, DaemonSet: "nvidia-vgpu-manager-daemonset", Column: "vgpu-manager"},
	Operand{Name: VGPUDeviceManager, DaemonSet: "nvidia-vgpu-device-manager", Column: "vgpu-device-manager"},
	Operand{Name: "sandbox-validator", DaemonSet: "nvidia-sandbox-validator", Column: "sandbox-validator"},
	Operand{Name: "vfio-manager", DaemonSet: "nvidia-vfio-manager", Column: "vfio-manager"},
	Operand{Name: "sandbox-device-plugin", DaemonSet: "nvidia-sandbox-device-plugin-daemonset", Column: "sandbox-device-plugin"},
	Operand{Name: "kata-sandbox-device-plugin", DaemonSet: "nvidia-kata-sandbox-device-plugin-daemonset", Column: "kata-device-plugin"},
	Operand{Name: "kata-manager", DaemonSet: "nvidia-kata-manager", Column: "kata-manager"},
	Operand{Name: CCManager, DaemonSet: "nvidia-cc-manager", Column: "cc-manager"},
	// The DRA stack (a GPUCluster; manifests/state-dra-driver, state-dra-validation,
	// state-dcgm, state-dcgm-exporter). nvidia-dra-validator's pods carry
	// app=nvidia-operator-validator, the label the upgrade controller waits on;
	// gpuops goes by the controlling DaemonSet, so they count as dra-validator.
	Operand{Name: DRADriver, DaemonSet: "nvidia-dra-driver-kubelet-plugin", Column: "dra-driver"},
	Operand{Name: DRAValidator, DaemonSet: "nvidia-dra-validator", Column: "dra-validator"},
	Operand{Name: "dcgm-dra", DaemonSet: "nvidia-dcgm-dra", Column: "dcgm-dra"},
	Operand{Name: "dcgm-exporter-dra", DaemonSet: "nvidia-dcgm-exporter-dra", Column: "dcgm-exporter-dra"},
)

// Names of further operands the rules refer to.
const (
	GPUFeatureDiscovery = "gpu-feature-discovery"
	DCGMExporter        = "dcgm-exporter"
	DCGM                = "dcgm"
	MIGManager          = "mig-manager"
	OperatorValidator   = "operator-validator"
	VGPUManager         = "vgpu-manager"
	VGPUDeviceManager   = "vgpu-device-manager"
	DRADriver           = "dra-driver"
	DRAValidator        = "dra-validator"
	CCManager           = "cc-manager"
)

// Helpers are DaemonSets that select nodes by an operand's deploy label but
// are not that operand, so --discover leaves them out: the MPS control
// daemon (state-mps-control-daemon) runs beside the device plugin
// (deploy.device-plugin=true and nvidia.com/mps.capable=true) and must not
// make the device plugin look present.
var Helpers = []string{MPSDaemonSet}

// AllRules is the start-up order the operator really has on a node, from the
// init containers of its DaemonSets:
//   - the toolkit's driver-validation waits for a driver, from a driver pod or
//     the host (HostDriverValues);
//   - the operator validator runs driver-validation, then toolkit-validation,
//     which writes /run/nvidia/validations/toolkit-ready, then cuda- and
//     plugin-validation (the latter dropped when the device plugin is
//     disabled);
//   - the device plugin, GFD, DCGM, DCGM exporter and MIG manager each have a
//     toolkit-validation init container that waits for toolkit-ready;
//   - the vGPU device manager's vgpu-manager-validation waits for the vGPU
//     manager (a pod, or one on the host);
//   - in the DRA stack the kubelet plugin's driver-validation waits for a
//     driver, and the DRA validator, DCGM and DCGM exporter take their GPUs
//     through resource claims the kubelet plugin must serve.
//
// A rule whose needed operand the ClusterPolicy switches off is not broken:
// the hosts provide it (Rule.Excused). DeviceRule comes first so the lab's
// one-word verdict is unchanged with all rules on.
var AllRules = []Rule{
	DeviceRule,
	{Operand: GPUFeatureDiscovery, Needs: ContainerToolkit, Finding: "gpu-feature-discovery-without-toolkit"},
	{Operand: DCGM, Needs: ContainerToolkit, Finding: "dcgm-without-toolkit"},
	{Operand: DCGMExporter, Needs: ContainerToolkit, Finding: "dcgm-exporter-without-toolkit"},
	{Operand: MIGManager, Needs: ContainerToolkit, Finding: "mig-manager-without-toolkit"},
	{Operand: ContainerToolkit, Needs: Driver, Finding: "toolkit-without-driver", HostValues: HostDriverValues},
	{Operand: OperatorValidator, Needs: Driver, Finding: "operator-validator-without-driver", HostValues: HostDriverValues},
	{Operand: OperatorValidator, Needs: ContainerToolkit, Finding: "operator-validator-without-toolkit"},
	{Operand: VGPUDeviceManager, Needs: VGPUManager, Finding: "vgpu-device-manager-without-vgpu-manager"},
	{Operand: DRADriver, Needs: Driver, Finding: "dra-driver-without-driver", HostValues: HostDriverValues},
	{Operand: DRAValidator, Needs: DRADriver, Finding: "dra-validator-without-dra-driver"},
	{Operand: "dcgm-dra", Needs: DRADriver, Finding: "dcgm-dra-without-dra-driver"},
	{Operand: "dcgm-exporter-dra", Needs: DRADriver, Finding: "dcgm-exporter-dra-without-dra-driver"},
}

// RulesFor keeps the rules whose two operands are both in the roster: a
// rule about an operand the cluster does not run cannot be judged there.
func RulesFor(roster []Operand, rules []Rule) []Rule {
	var out []Rule
	for _, r := range rules {
		_, errA := Lookup(roster, r.Operand)
		_, errB := Lookup(roster, r.Needs)
		if errA == nil && errB == nil {
			out = append(out, r)
		}
	}
	return out
}

// RuleOf finds the rule whose finding this is; a rule of that finding
// alone when none is.
func RuleOf(rules []Rule, finding string) Rule {
	for _, r := range rules {
		if r.Finding == finding {
			return r
		}
	}
	return Rule{Finding: finding}
}
