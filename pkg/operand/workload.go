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
// LabelOnly names) that the ClusterPolicy's node labeller writes "true" on a
// GPU node of that config, where they are absent or empty; it removes those
// of the other configs (Upstream: gpuStateLabels and getEffectiveStateLabels
// in controllers/state_manager.go). Under sandbox mode kata, vm-passthrough
// takes kata-sandbox-device-plugin for sandbox-device-plugin.
var WorkloadConfigs = map[string][]string{
	Container: {Driver, GPUFeatureDiscovery, ContainerToolkit, DevicePlugin, DCGM, DCGMExporter,
		"node-status-exporter", OperatorValidator, "client"},
	VMPassthrough: {"sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager", "cc-manager", "client"},
	VMVGPU:        {"sandbox-device-plugin", VGPUManager, VGPUDeviceManager, "sandbox-validator", "cc-manager", "client"},
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
)

// EmptyLabel says what the labeller does with the named operand's deploy
// label, present and empty, on a GPU node of the workload config, under the
// ClusterPolicy's sandbox mode ("" is kubevirt).
func EmptyLabel(config, sandboxMode, name string) Labelling {
	keys := WorkloadConfigs[config]
	if config == VMPassthrough && sandboxMode == "kata" {
		keys = append(slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "sandbox-device-plugin" }),
			"kata-sandbox-device-plugin")
	}
	switch {
	case slices.Contains(keys, name):
		return SetsTrue
	case name == MIGManager && config != Container, name == "kata-sandbox-device-plugin":
		return Removes
	}
	for _, other := range WorkloadConfigs {
		if slices.Contains(other, name) {
			return Removes
		}
	}
	return Unjudged
}
