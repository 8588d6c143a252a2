package operand

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// Release is a GPU Operator release line (vYY.M, every patch of it renders
// the same) and what of it gpuops judges by, where it differs from the
// newest (Upstream, per tag: assets/state-operator-validation/0500_daemonset.yaml,
// assets/gpu-feature-discovery/0500_daemonset.yaml, controllers/state_manager.go,
// cmd/nvidia-validator/main.go). What differs and gpuops need not model is
// listed in docs/compatibility.md.
type Release struct {
	Version string // vYY.M
	year    int
	minor   int
	// NVIDIAFSValidation: the operator validator runs an nvidia-fs-validation
	// init container after driver-validation where spec.gds.enabled (the
	// controller removes it otherwise: TransformValidatorComponent in
	// controllers/object_controls.go). v26.3.0 folds the check into
	// driver-validation (validateAdditionalDriverComponents).
	NVIDIAFSValidation bool
	// GDRCopyValidation: likewise gdrcopy-validation, after
	// nvidia-fs-validation, where spec.gdrcopy.enabled; v25.10 only.
	GDRCopyValidation bool
	// IMEXInit: GFD runs gpu-feature-discovery-imex-init after its
	// toolkit-validation, waiting for /run/nvidia/validations/driver-ready,
	// which the validator's driver-validation writes; v24.9 only.
	IMEXInit bool
	// ClientLabel: the node labeller writes nvidia.com/gpu.deploy.client in
	// every workload config; v26.7 on.
	ClientLabel bool
	// RepairsEmpty: the node labeller sets an empty deploy label of the
	// node's workload config to "true" (addGPUStateLabels); before v26.7 it
	// keeps a label that is present, empty or not.
	RepairsEmpty bool
	// KataDevicePlugin: under spec.sandboxWorkloads.mode kata, vm-passthrough
	// nodes take kata-sandbox-device-plugin for sandbox-device-plugin
	// (getEffectiveStateLabels); v26.3 on, which added the mode.
	KataDevicePlugin bool
	// CCCapableSelector: cc-manager's DaemonSet also selects
	// nvidia.com/cc.capable=true (assets/state-cc-manager/0500_daemonset.yaml);
	// before v26.3, which selects on the deploy label alone.
	CCCapableSelector bool
	// SchemaFields are ClusterPolicy spec fields (paths below spec) that
	// first appear in this release: its CRD
	// (deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml, as
	// config/crd/bases/ has it) serves them from its .0 tag on, no tag
	// before does, and every later tag still does (the CRD only gains
	// fields: read at v24.9.0 to v26.7.0, every tag). The oldest release
	// has none. ReleaseOfSchema reads them.
	SchemaFields []string
}

// Releases are the release lines gpuops knows, oldest first: those NVIDIA
// still supports. Each was read from its tags (vYY.M.0 to the last patch).
var Releases = []Release{
	{Version: "v24.9", year: 24, minor: 9, NVIDIAFSValidation: true, IMEXInit: true, CCCapableSelector: true},
	{Version: "v25.3", year: 25, minor: 3, NVIDIAFSValidation: true, CCCapableSelector: true,
		SchemaFields: []string{"driver.kernelModuleType"}},
	{Version: "v25.10", year: 25, minor: 10, NVIDIAFSValidation: true, GDRCopyValidation: true, CCCapableSelector: true,
		SchemaFields: []string{"driver.secretEnv", "dcgmExporter.hostPID"}},
	{Version: "v26.3", year: 26, minor: 3, KataDevicePlugin: true,
		SchemaFields: []string{"kataSandboxDevicePlugin", "sandboxWorkloads.mode"}},
	{Version: "v26.7", year: 26, minor: 7, KataDevicePlugin: true, ClientLabel: true, RepairsEmpty: true,
		SchemaFields: []string{"hostPaths.kubeletRootDir", "operator.metrics"}},
}

// ReleaseOfSchema is the release a cluster is judged as when neither the
// operator's Deployment nor the chart's label names its version: the
// oldest release whose ClusterPolicy CRD has the fields the served one has,
// that is the newest release one of whose SchemaFields the served schema
// has (has reports whether it has a path below spec), and the note that
// says so. A schema with none of them is the oldest release gpuops knows,
// or an older one. Helm installs the chart's CRDs once and upgrades them
// only through the chart's upgrade hook (operator.upgradeCRD), so the
// operator may be newer than its CRD: never older, hence "the oldest".
func ReleaseOfSchema(has func(field string) bool) (Release, string) {
	for i := len(Releases) - 1; i > 0; i-- {
		r := Releases[i]
		if j := slices.IndexFunc(r.SchemaFields, has); j >= 0 {
			return r, fmt.Sprintf("the GPU Operator's version not found (no operator Deployment, no chart label on the ClusterPolicy): judged as %s, the oldest release whose ClusterPolicy CRD serves spec.%s as the cluster's does",
				r.Version, r.SchemaFields[j])
		}
	}
	oldest := Releases[0]
	return oldest, fmt.Sprintf("the GPU Operator's version not found (no operator Deployment, no chart label on the ClusterPolicy): judged as %s, as the cluster's ClusterPolicy CRD serves no field a later release added (it may be older)",
		oldest.Version)
}

// Roster is the roster with what the release's DaemonSets select besides
// the deploy labels (Operand.Requires).
func (r Release) Roster(roster []Operand) []Operand {
	if !r.CCCapableSelector {
		return roster
	}
	out := slices.Clone(roster)
	for i := range out {
		if out[i].Name == CCManager {
			out[i].Requires = CCCapable
		}
	}
	return out
}

// Newest is the newest release gpuops knows: how a cluster is judged when
// it cannot tell the operator's version.
func Newest() Release { return Releases[len(Releases)-1] }

// releaseTag is an image tag that names a release: v26.7.0, 25.10.1,
// v24.9.2-ubi8 (the year and minor; the rest does not change what renders).
var releaseTag = regexp.MustCompile(`^v?(\d+)\.(\d+)(\.\d+)?([-+].*)?$`)

// ReleaseOf is the release an operator image tag names, and a note when
// gpuops judges the cluster as another: a tag it cannot parse (a digest,
// latest) or a release newer than it knows is judged as the newest, one
// older than it knows as the oldest, one between two it knows as the older
// of them. An empty tag (no operator found) is the newest, without a note.
func ReleaseOf(tag string) (Release, string) {
	if tag == "" {
		return Newest(), ""
	}
	m := releaseTag.FindStringSubmatch(tag)
	if m == nil {
		return Newest(), fmt.Sprintf("the GPU Operator's image tag %q names no release: judged as %s, the newest gpuops knows", tag, Newest().Version)
	}
	year, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	at := func(r Release) bool { return r.year < year || r.year == year && r.minor <= minor }
	oldest := Releases[0]
	if !at(oldest) {
		return oldest, fmt.Sprintf("GPU Operator %s is older than any release gpuops knows: judged as %s, the oldest", tag, oldest.Version)
	}
	i := len(Releases) - 1
	for !at(Releases[i]) { // stops at the oldest, which is at or before the tag
		i--
	}
	switch r := Releases[i]; {
	case r.year == year && r.minor == minor:
		return r, ""
	case i == len(Releases)-1:
		return r, fmt.Sprintf("GPU Operator %s is newer than any release gpuops knows: judged as %s, the newest", tag, r.Version)
	default:
		return r, fmt.Sprintf("GPU Operator %s is no release gpuops knows: judged as %s, the one before it", tag, r.Version)
	}
}
