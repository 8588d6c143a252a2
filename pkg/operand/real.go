package operand

// The operands of a real GPU Operator install beyond the lab's five, with the
// DaemonSet the operator renders for each (NVIDIA/gpu-operator,
// assets/state-*/ and manifests/state-*/), in the operator's start-up order.
// --discover takes a cluster's operands from its live DaemonSets; this list
// only gives known ones their usual column name and place.
var Real = append(Lab[:len(Lab):len(Lab)],
	Operand{Name: OperatorValidator, DaemonSet: "nvidia-operator-validator", Column: "validator"},
	Operand{Name: DCGM, DaemonSet: "nvidia-dcgm", Column: "dcgm-hostengine"},
	Operand{Name: MIGManager, DaemonSet: "nvidia-mig-manager", Column: "mig-manager"},
	Operand{Name: "node-status-exporter", DaemonSet: "nvidia-node-status-exporter", Column: "node-status"},
	Operand{Name: "vgpu-manager", DaemonSet: "nvidia-vgpu-manager-daemonset", Column: "vgpu-manager"},
	Operand{Name: "vgpu-device-manager", DaemonSet: "nvidia-vgpu-device-manager", Column: "vgpu-device-manager"},
	Operand{Name: "sandbox-validator", DaemonSet: "nvidia-sandbox-validator", Column: "sandbox-validator"},
	Operand{Name: "vfio-manager", DaemonSet: "nvidia-vfio-manager", Column: "vfio-manager"},
	Operand{Name: "sandbox-device-plugin", DaemonSet: "nvidia-sandbox-device-plugin-daemonset", Column: "sandbox-device-plugin"},
	Operand{Name: "kata-sandbox-device-plugin", DaemonSet: "nvidia-kata-sandbox-device-plugin-daemonset", Column: "kata-device-plugin"},
	Operand{Name: "kata-manager", DaemonSet: "nvidia-kata-manager", Column: "kata-manager"},
	Operand{Name: "cc-manager", DaemonSet: "nvidia-cc-manager", Column: "cc-manager"},
)

// Names of further operands the rules refer to.
const (
	GPUFeatureDiscovery = "gpu-feature-discovery"
	DCGMExporter        = "dcgm-exporter"
	DCGM                = "dcgm"
	MIGManager          = "mig-manager"
	OperatorValidator   = "operator-validator"
)

// Helpers are DaemonSets that select nodes by an operand's deploy label but
// are not that operand, so --discover leaves them out: the MPS control
// daemon runs beside the device plugin (deploy.device-plugin=true and
// nvidia.com/mps.capable=true) and must not make the device plugin look present.
var Helpers = []string{"nvidia-device-plugin-mps-control-daemon"}

// HostDriverValues are the driver deploy label values that mean the host
// already has the driver. "false" is how the lab (and the operator's docs)
// mark a node whose driver is pre-installed: the operator never writes
// "false" itself, a person does, and the reason to keep the driver
// DaemonSet off a GPU node is a host driver. "pre-installed" is what
// node-side tooling writes for the same state. A node without the label has
// no driver at all.
var HostDriverValues = []string{"false", "pre-installed"}

// AllRules is the start-up order the operator really has on a node: each
// operand's init container waits for the one before it (toolkit-validation
// waits for /run/nvidia/validations/toolkit-ready, which the toolkit writes;
// the toolkit's driver-validation waits for a driver, from the driver
// DaemonSet or the host). DeviceRule comes first so the lab's one-word
// verdict is unchanged with all rules on.
var AllRules = []Rule{
	DeviceRule,
	{Operand: GPUFeatureDiscovery, Needs: ContainerToolkit, Finding: "gpu-feature-discovery-without-toolkit"},
	{Operand: DCGM, Needs: ContainerToolkit, Finding: "dcgm-without-toolkit"},
	{Operand: DCGMExporter, Needs: ContainerToolkit, Finding: "dcgm-exporter-without-toolkit"},
	{Operand: MIGManager, Needs: ContainerToolkit, Finding: "mig-manager-without-toolkit"},
	{Operand: ContainerToolkit, Needs: Driver, Finding: "toolkit-without-driver", HostValues: HostDriverValues},
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
