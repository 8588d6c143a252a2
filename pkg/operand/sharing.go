package operand

import "strings"

// Node labels that say how a node offers its GPUs besides whole
// nvidia.com/gpu, read by the health judge against the device plugin's and
// the MIG manager's configs:
//   - DevicePluginConfigLabel picks the device plugin's config, a key of the
//     ConfigMap spec.devicePlugin.config.name names (k8s-device-plugin
//     v0.20.0 cmd/config-manager/main.go, DefaultConfigLabel);
//   - MPSCapableLabel is GFD's, true where the config shares by MPS; the
//     MPS control daemon (MPSDaemonSet) selects it (internal/lm/nvml.go,
//     deployments/helm/nvidia-device-plugin/templates/daemonset-mps-control-daemon.yml);
//   - MIGConfigLabel picks the MIG manager's layout, MIGChange.StateLabel
//     says how applying it went (mig-parted v0.15.0
//     pkg/mig/reconfigure/reconfigure.go);
//   - GFD counts each MIG profile's devices in nvidia.com/mig-<profile>.count
//     (internal/lm/mig-strategy.go) and, under the single strategy, suffixes
//     the product label with -MIG-<profile>.
const (
	DevicePluginConfigLabel = "nvidia.com/device-plugin.config"
	MPSCapableLabel         = "nvidia.com/mps.capable"
	MIGConfigLabel          = "nvidia.com/mig.config"
	MIGCountSuffix          = ".count"
	MPSDaemonSet            = "nvidia-device-plugin-mps-control-daemon"
	// MIGConfigKey is the key of a custom MIG ConfigMap that holds the
	// mig-parted config (NVIDIA/gpu-operator v26.7.0
	// controllers/object_controls.go, the mig-parted-config volume).
	MIGConfigKey = "config.yaml"
)

// The MIG manager's states on MIGChange.StateLabel.
const (
	MIGPending   = "pending"
	MIGRebooting = "rebooting"
	MIGSuccess   = "success"
	MIGFailed    = "failed"
)

// OfferLabel reports whether the health judge reads a node label of this
// key to know how the node offers its GPUs.
func OfferLabel(key string) bool {
	switch key {
	case DevicePluginConfigLabel, MPSCapableLabel, MIGConfigLabel, GPUProductLabel:
		return true
	}
	return strings.HasPrefix(key, "nvidia.com/mig-") && strings.HasSuffix(key, MIGCountSuffix)
}

// MIGChanging picks the MIG manager's state label while it applies a
// layout: how long it has been at it says whether it is stuck.
func MIGChanging(key, value string) bool {
	return key == MIGChange.StateLabel && (value == MIGPending || value == MIGRebooting)
}
