package operand

import "strings"

// Who takes a GPU node out of service, and the marks each one leaves on it
// (Upstream, cited by repo, version and file). The ledger (pkg/ledger) tells
// them apart by these marks first and by the field manager that last set
// spec.unschedulable second; the quarantine (pkg/quarantine) never touches a
// node another one has marked.
//
// Every actor below cordons through k8s.io/kubectl/pkg/drain
// (RunCordonOrUncordon: a patch of spec.unschedulable without a field
// manager), so its manager is its binary's name, which the API server takes
// from the user agent.

// The GPU Operator's driver upgrade controller marks a node with
// UpgradeStateLabel, its annotations (UpgradeAnnotationPrefix,
// UpgradeInitialUnschedulable for a node cordoned before it came) and
// cordons as UpgradeManager (upgrade.go).

// DriverManagerInitialState is the annotation k8s-driver-manager writes
// before it cordons a node, holding whether the node was cordoned already;
// it uncordons only when it wrote one saying "false"
// (NVIDIA/k8s-driver-manager 0914515, internal/kubernetes/client.go
// CordonNode, UncordonNode). Its field manager is DriverUpgrade.Manager.
const DriverManagerInitialState = "nvidia.com/driver-manager.node-initial-state.unschedulable"

// NVSentinel's fault-quarantine module records the health event it
// quarantined a node for in these annotations, and labels the node
// <prefix>cordon-by=NVSentinel, the prefix k8saas.nvidia.com/ by default
// (NVIDIA/NVSentinel 569d1eb, fault-quarantine/pkg/common/common.go;
// fault-quarantine/pkg/reconciler/reconciler.go SetLabelKeys; docs of
// fault-quarantine: labelPrefix). The taints it applies are listed in
// NVSentinelAppliedTaints.
const (
	NVSentinelHealthEvent     = "quarantineHealthEvent"
	NVSentinelAppliedTaints   = "quarantineHealthEventAppliedTaints"
	NVSentinelCordonedByLabel = "cordon-by" // after the configured prefix
	NVSentinelName            = "NVSentinel"
)

// kured marks the node it reboots with a reboot-in-progress annotation
// (weave.works/ in its older releases,
// kured.dev/ in the newer) and records a cordon it
// found in KuredUnschedulableBeforeDrain (kubereboot/kured 7ebc881,
// internal/k8soperations/annotations.go; cmd/kured/main.go
// KuredRebootInProgressAnnotation). Its field manager is KuredManager.
var KuredRebootInProgress = []string{"weave.works/kured-reboot-in-progress", "kured.dev/kured-reboot-in-progress"}

const (
	KuredUnschedulableBeforeDrain = "kured.dev/node-unschedulable-before-drain"
	KuredManager                  = "kured"
)

// KubectlManager starts the field manager of every kubectl write: kubectl
// itself (kubectl cordon and drain of kubectl 1.37 write as kubectl, as
// test/quarantine sees; older ones as kubectl-cordon), kubectl-edit,
// kubectl-patch, kubectl-label. A person, as far as the ledger can tell.
const KubectlManager = "kubectl"

// gpuops's own quarantine: a cordon under QuarantineManager, recorded in
// QuarantineAnnotation (JSON: the cause code and operand, since when), and
// the fuse in the ConfigMap QuarantineFuseConfigMap of the namespace.
const (
	QuarantineAnnotation    = "gpuops.io/quarantine"
	QuarantineManager       = "gpuops-quarantine"
	QuarantineFuseConfigMap = "gpuops-quarantine"
	QuarantineLease         = "gpuops-quarantine"
)

// IsOutOfServiceAnnotation reports whether a node annotation is one of the
// marks above: a snapshot keeps these and no others (they are few, the
// others can outweigh the rest of a node).
func IsOutOfServiceAnnotation(key string) bool {
	switch {
	case IsUpgradeAnnotation(key), strings.HasPrefix(key, NVSentinelHealthEvent):
		return true
	}
	switch key {
	case DriverManagerInitialState, KuredUnschedulableBeforeDrain, QuarantineAnnotation, KuredRebootInProgress[0], KuredRebootInProgress[1]:
		return true
	}
	return false
}

// IsNVSentinelCordonLabel reports whether a node label key is NVSentinel's
// cordon-by label, whatever its configured prefix (its value then names who
// cordoned: NVSentinelName).
func IsNVSentinelCordonLabel(key string) bool {
	return key == NVSentinelCordonedByLabel || strings.HasSuffix(key, "/"+NVSentinelCordonedByLabel)
}
