package operand

import "strings"

// Who writes which deploy label value on a real install (Upstream):
//
//   - The operator's node-labelling controller (field manager gpu-operator)
//     writes "true" for every operand of the node's workload config
//     (container, vm-passthrough, vm-vgpu) on nodes with nvidia.com/gpu.present
//     =true, whether or not the ClusterPolicy enables the operand, and
//     mig-manager=true on MIG-capable nodes. It keeps any other non-empty
//     value (a helper's pause), takes "" for unset, and removes every deploy
//     label from a node without gpu.present=true or with
//     nvidia.com/gpu.deploy.operands=false.
//   - The driver pod's k8s-driver-manager init container (field manager
//     driver-manager) writes "pre-installed" on the driver label when the host
//     has a driver, and pauses the other operands across a driver reload
//     (DriverUpgrade below).
//   - The MIG manager (nvidia-mig-manager) pauses the GPU clients while it
//     repartitions the GPUs (MIGChange).
//   - The vGPU device manager (nvidia-k8s-vgpu-dm) pauses the sandbox device
//     plugin and validator while it changes vGPU devices (VGPUChange).
//
// Field managers are the helpers' binary names, which the API server takes
// from their user agent: none of them sets one.

// HostDriverValues are the driver deploy label values that mean the host
// already has the driver: "pre-installed" is what k8s-driver-manager writes
// when it finds one; "false" is how the lab and the operator's docs mark a
// node whose driver is pre-installed (the operator never writes it). A node
// without the label has no driver at all.
var HostDriverValues = []string{"false", "pre-installed"}

// LabelOnly are deploy label keys with no DaemonSet of their own, so they are
// never operands: operands=false switches a node's operands off; client is
// the key third-party GPU clients select on (the helpers pause it too); nvsm
// belongs to NVSM on DGX systems, which the helpers pause but the operator
// does not deploy.
var LabelOnly = []string{"operands", "client", "nvsm"}

// Pause is how a helper stops operands on a node for a while: it rewrites
// their deploy labels so their DaemonSets no longer select the node, and
// writes them back when done.
type Pause struct {
	Value   string // the value it writes; also the reason code
	Helper  string // who writes it, in words
	While   string // when, in words
	Manager string // the field manager its label writes carry
	// StateLabel is the node label where the helper reports its progress.
	StateLabel string
	// Suffixed: a value other than true, false and "" is kept, with
	// "_"+Value appended.
	Suffixed bool
	Operands []string // the operands it pauses (besides LabelOnly keys)
}

// The pauses of the operator's helpers.
var (
	// k8s-driver-manager (cmd/driver-manager, evictAllGPUOperatorComponents):
	// "true" becomes the value, another value gets "_"+value appended, "false"
	// stays, and a label that is absent is written as "" (it snapshots an
	// absent label as ""). The DRA kubelet plugin is paused last, alone.
	DriverUpgrade = Pause{
		Value: "paused-for-driver-upgrade", Helper: "the driver manager", While: "across a driver upgrade",
		Manager: "driver-manager", StateLabel: "nvidia.com/gpu-driver-upgrade-state", Suffixed: true,
		Operands: []string{OperatorValidator, ContainerToolkit, DevicePlugin, GPUFeatureDiscovery, DCGMExporter, DCGM,
			MIGManager, "sandbox-validator", "sandbox-device-plugin", VGPUDeviceManager,
			DRADriver, DRAValidator, "dcgm-dra", "dcgm-exporter-dra"},
	}
	// mig-parted pkg/mig/reconfigure: every value but "false" becomes the
	// value (an absent label too); mig.config.state goes pending, then
	// rebooting if a reboot is needed, then success or failed, after the
	// labels are written back.
	MIGChange = Pause{
		Value: "paused-for-mig-change", Helper: "the MIG manager", While: "while it repartitions the GPUs",
		Manager: "nvidia-mig-manager", StateLabel: "nvidia.com/mig.config.state",
		Operands: []string{DevicePlugin, GPUFeatureDiscovery, DCGMExporter, DCGM},
	}
	// vgpu-device-manager cmd/nvidia-k8s-vgpu-dm: "false" and "" stay, any
	// other value becomes the value; vgpu.config.state goes pending, then
	// success or failed.
	VGPUChange = Pause{
		Value: "paused-for-vgpu-change", Helper: "the vGPU device manager", While: "while it changes the vGPU devices",
		Manager: "nvidia-k8s-vgpu-dm", StateLabel: "nvidia.com/vgpu.config.state",
		Operands: []string{"sandbox-device-plugin", "sandbox-validator"},
	}
)

// Pauses lists the helpers' pauses.
var Pauses = []Pause{DriverUpgrade, MIGChange, VGPUChange}

// PauseOf reports the pause a deploy label value stands for, and the value
// the helper will write back ("true", or the value it suffixed).
func PauseOf(value string) (p Pause, restores string, ok bool) {
	for _, p := range Pauses {
		if value == p.Value {
			return p, "true", true
		}
		// <base>_<pause>, without building "_"+p.Value: the judges ask this
		// of every operand's label on every node.
		if base, found := strings.CutSuffix(value, p.Value); found && p.Suffixed {
			if base, found := strings.CutSuffix(base, "_"); found {
				return p, base, true
			}
		}
	}
	return Pause{}, "", false
}

// IsPaused reports whether a deploy label value is a helper's pause: the
// one definition that plan, the guard's CEL and the judges share.
func IsPaused(value string) bool {
	_, _, ok := PauseOf(value)
	return ok
}

// Paused reports whether a node label is a deploy label a helper has paused:
// the labels whose last writer and time tell how long a pause has lasted.
func Paused(key, value string) bool { return IsPaused(value) && IsDeployLabel(key) }
