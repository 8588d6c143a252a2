package operand

// Switch is how the ClusterPolicy (clusterpolicies.nvidia.com/v1) turns an
// operand's DaemonSet on or off (Upstream: the IsEnabled methods of
// api/nvidia/v1/clusterpolicy_types.go, ClusterPolicyController.isStateEnabled
// in controllers/state_manager.go). An operand the policy switches off has no
// DaemonSet, yet its deploy label is still "true" wherever the node's
// workload config lists it: the labeller does not look at the policy.
type Switch struct {
	Field   string // spec.<Field>.enabled
	Default bool   // when enabled is unset
	Sandbox bool   // also needs spec.sandboxWorkloads.enabled (default false)
	Mode    string // also needs spec.sandboxWorkloads.mode (default kubevirt) to be this
	Never   bool   // never rendered, whatever the policy says
}

// Switches maps operand names to their switch. The operator validator has
// none: it always runs. The DRA stack has none: a GPUCluster, not the
// ClusterPolicy, renders it.
//
// With spec.driver.useNvidiaDriverCRD the ClusterPolicy renders no driver
// DaemonSet at all: NVIDIADriver objects (nvidiadrivers.nvidia.com/v1alpha1)
// do, one per node pool, on nodes the operator marks with NVIDIADriverOwner;
// a node that no NVIDIADriver owns gets no driver pod.
var Switches = map[string]Switch{
	Driver:                       {Field: "driver", Default: true},
	ContainerToolkit:             {Field: "toolkit", Default: true},
	DevicePlugin:                 {Field: "devicePlugin", Default: true},
	GPUFeatureDiscovery:          {Field: "gfd", Default: true},
	DCGMExporter:                 {Field: "dcgmExporter", Default: true},
	DCGM:                         {Field: "dcgm", Default: true},
	MIGManager:                   {Field: "migManager", Default: true},
	"node-status-exporter":       {Field: "nodeStatusExporter"},
	VGPUManager:                  {Field: "vgpuManager", Sandbox: true},
	VGPUDeviceManager:            {Field: "vgpuDeviceManager", Sandbox: true},
	"vfio-manager":               {Field: "vfioManager", Sandbox: true},
	"sandbox-validator":          {Field: "sandboxWorkloads", Sandbox: true},
	"sandbox-device-plugin":      {Field: "sandboxDevicePlugin", Sandbox: true, Mode: "kubevirt"},
	"kata-sandbox-device-plugin": {Field: "kataSandboxDevicePlugin", Sandbox: true, Mode: "kata"},
	CCManager:                    {Field: "ccManager", Sandbox: true, Mode: "kata"},
	"kata-manager":               {Field: "kataManager", Never: true}, // deprecated: the operator ignores it
}

// NVIDIADriverOwner is the node label naming the NVIDIADriver that serves
// the node (internal/consts NVIDIADriverOwnerLabel).
const NVIDIADriverOwner = "nvidia.com/gpu-operator.driver.owner"

// GPUPresent is the node label the operator keeps in step with NFD's PCI
// labels: "true" on nodes with an NVIDIA GPU, "false" once it is gone. The
// lab spec sets it on the lab's nodes, and up reads the GPU nodes by it.
const GPUPresent = "nvidia.com/gpu.present"

// ManagedByLabel names who manages an object: the GPU Operator's Helm chart
// sets it to gpu-operator on every DaemonSet the operator renders
// (spec.daemonsets.labels); gpuops sets it on the namespace it creates, so
// the ownership record says who created the namespace.
const ManagedByLabel = "app.kubernetes.io/managed-by"
