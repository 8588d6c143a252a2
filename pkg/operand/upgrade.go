package operand

import (
	"slices"
	"strings"
	"time"
)

// The GPU Operator's driver upgrade controller (Upstream: gpu-operator
// controllers/upgrade_controller.go, driving NVIDIA/k8s-operator-libs
// pkg/upgrade with driver name "gpu", cmd/gpu-operator/main.go) walks each
// node with a driver pod through the states of UpgradeStateLabel, within a
// budget of the upgrade policy. The facts below are its, cited by file.

// UpgradeStateLabel is the node label holding a node's upgrade state
// (consts.go UpgradeStateLabelKeyFmt with driver name "gpu").
const UpgradeStateLabel = "nvidia.com/gpu-driver-upgrade-state"

// UpgradeSkipLabel set to "true" keeps a node in upgrade-required: the
// controller never starts its upgrade (consts.go UpgradeSkipNodeLabelKeyFmt;
// upgrade_inplace.go ProcessUpgradeRequiredNodes, the only place it reads it).
const UpgradeSkipLabel = "nvidia.com/gpu-driver-upgrade.skip"

// UpgradeAnnotationPrefix starts every node annotation of the controller:
// the ones below, the safe-load wait, the requestor mode (consts.go).
const UpgradeAnnotationPrefix = "nvidia.com/gpu-driver-upgrade"

// The controller's node annotations a judge reads (consts.go).
const (
	// UpgradeInitialUnschedulable marks a node that was already cordoned
	// when its upgrade began: the controller leaves it cordoned at the end.
	UpgradeInitialUnschedulable = "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
	// UpgradeWaitForJobsStart and UpgradeValidationStart hold, in Unix
	// seconds, when the node began waiting for jobs and for validation.
	UpgradeWaitForJobsStart = "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time"
	UpgradeValidationStart  = "nvidia.com/gpu-driver-upgrade-validation-start-time"
)

// The upgrade states, in the order a node goes through them (consts.go).
// node-maintenance-required and post-maintenance-required belong to the
// requestor mode, where an external maintenance operator cordons and drains.
const (
	UpgradeRequired            = "upgrade-required"
	UpgradeCordonRequired      = "cordon-required"
	UpgradeWaitForJobsRequired = "wait-for-jobs-required"
	UpgradePodDeletionRequired = "pod-deletion-required"
	UpgradeDrainRequired       = "drain-required"
	UpgradeNodeMaintenance     = "node-maintenance-required"
	UpgradePostMaintenance     = "post-maintenance-required"
	UpgradePodRestartRequired  = "pod-restart-required"
	UpgradeValidationRequired  = "validation-required"
	UpgradeUncordonRequired    = "uncordon-required"
	UpgradeDone                = "upgrade-done"
	UpgradeFailed              = "upgrade-failed"
)

// UpgradeStates are the state label's values, in order.
var UpgradeStates = []string{UpgradeRequired, UpgradeCordonRequired, UpgradeWaitForJobsRequired,
	UpgradePodDeletionRequired, UpgradeDrainRequired, UpgradeNodeMaintenance, UpgradePostMaintenance,
	UpgradePodRestartRequired, UpgradeValidationRequired, UpgradeUncordonRequired, UpgradeDone, UpgradeFailed}

// UpgradeCounted reports whether the controller counts a node in this state
// among the nodes it manages, the total its budget is computed from
// (common_manager.go GetTotalManagedNodes): no state yet, and every state but
// the requestor mode's two.
func UpgradeCounted(state string) bool {
	return state == "" || slices.Contains(UpgradeStates, state) && state != UpgradeNodeMaintenance && state != UpgradePostMaintenance
}

// UpgradeInProgress reports whether a node in this state uses a slot of
// maxParallelUpgrades: every counted state but none, upgrade-required and
// upgrade-done; upgrade-failed does (GetUpgradesInProgress).
func UpgradeInProgress(state string) bool {
	return UpgradeCounted(state) && state != "" && state != UpgradeRequired && state != UpgradeDone
}

// UpgradeTraced picks the node labels whose last writer and time an
// upgrades read keeps: the state label, to tell how long a node has been in
// its state.
func UpgradeTraced(key, _ string) bool { return key == UpgradeStateLabel }

// IsUpgradeAnnotation reports whether a node annotation is the controller's.
func IsUpgradeAnnotation(key string) bool { return strings.HasPrefix(key, UpgradeAnnotationPrefix) }

// The policy's defaults, as the CRDs set them when a field is left out
// (k8s-operator-libs api/upgrade/v1alpha1/upgrade_spec.go; gpu-operator
// api/nvidia/v1alpha1/nvidiadriver_types.go GetUpgradePolicyWithDefaults).
// maxParallelUpgrades 0 means no limit; maxUnavailable is a count or a
// percentage of the managed nodes, rounded up.
const (
	DefaultMaxParallelUpgrades = 1
	DefaultMaxUnavailable      = "25%"
	// DefaultUpgradeTimeoutSeconds is podDeletion's and drain's timeout.
	DefaultUpgradeTimeoutSeconds = 300
	// ClusterPolicy's autoUpgrade defaults to false, an NVIDIADriver's to
	// true (also when it has no upgradePolicy at all).
	DefaultClusterPolicyAutoUpgrade = false
	DefaultNVIDIADriverAutoUpgrade  = true
)

// The controller's limits on a node's upgrade.
const (
	// UpgradeMaxRestarts: a driver pod with a container not Ready after
	// more restarts than this fails the node (common_manager.go
	// isDriverPodFailing).
	UpgradeMaxRestarts = 10
	// UpgradeValidationTimeout: validation pods not Ready this long after
	// validation-required began fail the node (validation_manager.go
	// validationTimeoutSeconds).
	UpgradeValidationTimeout = 600 * time.Second
)

// UpgradeValidator is the DaemonSet whose pods validate a node's new driver
// (cmd/gpu-operator/main.go WithValidationEnabled("app=nvidia-operator-validator")).
const UpgradeValidator = "nvidia-operator-validator"

// UpgradeManager is the field manager of the controller's writes to a node
// (its state label, cordon and uncordon through k8s.io/kubectl/pkg/drain):
// the operator's binary, /usr/bin/gpu-operator, whose user agent the API
// server takes as the manager.
const UpgradeManager = "gpu-operator"

// UpgradeEventReason is the reason of the controller's Events on a node
// (util.go GetEventReason: the driver name upper-cased + "DriverUpgrade").
// The recorder files a node's Events in namespace default.
const UpgradeEventReason = "GPUDriverUpgrade"

// RevisionHashLabel is the label the DaemonSet controller puts on a pod and
// on the ControllerRevision of its template: a driver pod is in sync with
// its DaemonSet when it carries the hash of the latest revision
// (pod_manager.go GetPodControllerRevisionHash, GetDaemonsetControllerRevisionHash).
const RevisionHashLabel = "controller-revision-hash"
