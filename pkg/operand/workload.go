package operand

import "slices"

// WorkloadConfigLabel names a node's workload config: which stack of
// operands the operator's node labeller deploys there.
const WorkloadConfigLabel = "nvidia.com/gpu.workload.config"

// The workload configs.
const (
	Container     = "container" // the default
	VMPassthrough = "vm-passthrough"
	VMVGPU        = "vm-vgpu"
)

// WorkloadConfigs are, per workload config, the deploy labels (operand and
// LabelOnly names) that the newest release's ClusterPolicy node labeller
// writes "true" on a GPU node of that config, where they are absent or
// empty; it removes those of the other configs (Upstream: gpuStateLabels and
// getEffectiveStateLabels in controllers/state_manager.go). Under sandbox
// mode kata, vm-passthrough takes kata-sandbox-device-plugin for
// sandbox-device-plugin. Releases before v26.7 write no client label
// (Release.ClientLabel).
var WorkloadConfigs = map[string][]string{
	Container: {Driver, GPUFeatureDiscovery, ContainerToolkit, DevicePlugin, DCGM, DCGMExporter,
		"node-status-exporter", OperatorValidator, "client"},
	VMPassthrough: {"sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager", CCManager, "client"},
	VMVGPU:        {"sandbox-device-plugin", VGPUManager, VGPUDeviceManager, "sandbox-validator", CCManager, "client"},
}

// WorkloadConfigOf is the workload config the labeller applies to a node
// (getWorkloadConfig upstream): the node's label when sandbox workloads are
// on and it names a config, container otherwise. (A ClusterPolicy's
// spec.sandboxWorkloads.defaultWorkload can replace that default; gpuops
// does not read it.)
func WorkloadConfigOf(labels map[string]string, sandbox bool) string {
	if c := labels[WorkloadConfigLabel]; sandbox && WorkloadConfigs[c] != nil {
		return c
	}
	return Container
}

// Labelling is what the labeller does with a deploy label that is present
// but empty on a GPU node.
type Labelling int

const (
	// Unjudged: the label's fate hangs on what the catalog does not model:
	// the DRA stack's keys (a GPUCluster sets them, a ClusterPolicy removes
	// them), mig-manager on a container node (set only when absent, on
	// MIG-capable nodes, and never removed there) and keys the labeller
	// does not know.
	Unjudged Labelling = iota
	SetsTrue           // the key belongs to the node's workload config
	Removes            // the key belongs to another workload config
	// Keeps: the key belongs to the node's workload config, but the release
	// keeps a label that is present, empty or not (Release.RepairsEmpty).
	Keeps
)

// EmptyLabel says what the release's labeller does with the named operand's
// deploy label, present and empty, on a GPU node of the workload config,
// under the ClusterPolicy's sandbox mode ("" is kubevirt).
func (r Release) EmptyLabel(config, sandboxMode, name string) Labelling {
	keys := r.stateLabels(config)
	if config == VMPassthrough && sandboxMode == "kata" && r.KataDevicePlugin {
		keys = append(slices.DeleteFunc(keys, func(k string) bool { return k == "sandbox-device-plugin" }),
			"kata-sandbox-device-plugin")
	}
	switch {
	case slices.Contains(keys, name) && r.RepairsEmpty:
		return SetsTrue
	case slices.Contains(keys, name):
		return Keeps
	case name == MIGManager && config != Container, name == "kata-sandbox-device-plugin" && r.KataDevicePlugin:
		return Removes
	}
	for other := range WorkloadConfigs {
		if slices.Contains(r.stateLabels(other), name) {
			return Removes
		}
	}
	return Unjudged
}

// stateLabels are the keys the release's labeller writes in a workload
// config (a copy).
func (r Release) stateLabels(config string) []string {
	keys := slices.Clone(WorkloadConfigs[config])
	if !r.ClientLabel {
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "client" })
	}
	return keys
}
