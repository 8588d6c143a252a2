package snapshot

import (
	"bytes"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ClusterPolicy is what a judge needs of the GPU Operator's ClusterPolicy
// (clusterpolicies.nvidia.com/v1, cluster-scoped, one per cluster): which
// operands it switches on.
type ClusterPolicy struct {
	Name string
	// Namespace is status.namespace, where the operator renders its
	// DaemonSets; empty until the operator has reconciled the policy.
	Namespace string
	// Enabled holds spec.<field>.enabled for every spec field that sets it
	// (driver, toolkit, devicePlugin, sandboxWorkloads, ...): a field
	// missing here is at the operator's default.
	Enabled map[string]bool
	// SandboxMode is spec.sandboxWorkloads.mode (kubevirt or kata; empty
	// means kubevirt).
	SandboxMode string
	// NVIDIADriverCRD is spec.driver.useNvidiaDriverCRD: NVIDIADriver
	// objects render the driver DaemonSets instead of the policy.
	NVIDIADriverCRD bool
	// UpgradePolicy is spec.driver.upgradePolicy, nil when the policy sets
	// none (the upgrade controller then does nothing).
	UpgradePolicy *UpgradePolicy
	// Offer names the device plugin's and the MIG manager's configs.
	Offer OfferPolicy
	// ChartVersion is the operator's version as the Helm chart labels the
	// policy (app.kubernetes.io/version); empty when it does not: the
	// reader's fallback when it finds no operator Deployment.
	ChartVersion string
}

// UpgradePolicy is how the driver upgrade controller may upgrade the nodes
// of one pool (DriverUpgradePolicySpec of NVIDIA/k8s-operator-libs
// api/upgrade/v1alpha1), with the CRD's defaults filled in where a field is
// left out.
type UpgradePolicy struct {
	AutoUpgrade bool `json:"autoUpgrade"`
	// MaxParallelUpgrades is how many nodes may upgrade at once; 0: all.
	MaxParallelUpgrades int `json:"maxParallelUpgrades"`
	// MaxUnavailable is a count or a percentage of the pool's nodes; nil
	// means all of them (the controller's rule when the CRD left it unset).
	MaxUnavailable    *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	WaitForCompletion WaitForCompletion   `json:"waitForCompletion"`
	PodDeletion       PodDeletion         `json:"podDeletion"`
	Drain             Drain               `json:"drain"`
}

// WaitForCompletion says which pods the controller waits for before it
// deletes pods or drains; 0 seconds: without a limit.
type WaitForCompletion struct {
	PodSelector    string `json:"podSelector,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// PodDeletion is how the controller deletes the pods that use GPUs.
type PodDeletion struct {
	Force          bool `json:"force"`
	TimeoutSeconds int  `json:"timeoutSeconds"`
	DeleteEmptyDir bool `json:"deleteEmptyDir"`
}

// Drain is whether and how the controller drains a node.
type Drain struct {
	Enable         bool   `json:"enable"`
	Force          bool   `json:"force"`
	PodSelector    string `json:"podSelector,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	DeleteEmptyDir bool   `json:"deleteEmptyDir"`
}

// NVIDIADriver is what a judge needs of an NVIDIADriver
// (nvidiadrivers.nvidia.com/v1alpha1): the kind of driver it renders.
type NVIDIADriver struct {
	Name       string
	DriverType string // gpu, vgpu or vgpu-host-manager
	// NodeSelector is spec.nodeSelector: the node pool it serves.
	NodeSelector map[string]string
	// UpgradePolicy is spec.upgradePolicy with the defaults filled in (an
	// NVIDIADriver without one upgrades automatically, with the defaults).
	UpgradePolicy *UpgradePolicy
}

// LabelChange says who last wrote a node label and when: the field manager
// whose managedFields entry owns the label, and that entry's time (the
// manager's last write to the node, which may be later than this label's).
type LabelChange struct {
	Manager string
	Time    time.Time
}

// LabelChangesFrom reads who last wrote each of the label keys from a node's
// managedFields: the manager whose entry owns metadata.labels.<key> (the
// latest one, should several share it) and the entry's time. Keys no entry
// TracedKeys are the keys of the labels pick selects: those whose last
// writer a reader keeps (LabelChangesFrom).
func TracedKeys(labels map[string]string, pick func(key, value string) bool) []string {
	var keys []string
	for k, v := range labels {
		if pick(k, v) {
			keys = append(keys, k)
		}
	}
	return keys
}

// owns are left out.
func LabelChangesFrom(entries []metav1.ManagedFieldsEntry, keys []string) map[string]LabelChange {
	paths := make([]fieldpath.Path, len(keys))
	for i, k := range keys {
		paths[i] = fieldpath.MakePathOrDie("metadata", "labels", k)
	}
	// Parse only entries that name a key somewhere: most own other labels
	// (NFD's own a hundred), and parsing is most of the cost.
	names := func(raw []byte) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return bytes.Contains(raw, []byte(`"f:`+k+`"`)) })
	}
	out := map[string]LabelChange{}
	for i, c := range lastWriters(entries, paths, names) {
		if c != nil {
			out[keys[i]] = *c
		}
	}
	return out
}

// CordonFrom reads who last set a node's spec.unschedulable from its
// managedFields, as LabelChangesFrom does for a label; nil when no entry
// owns it.
func CordonFrom(entries []metav1.ManagedFieldsEntry) *LabelChange {
	return specWriter(entries, "unschedulable")
}

// TainterFrom reads who last wrote a node's spec.taints from its
// managedFields; nil when no entry owns it.
func TainterFrom(entries []metav1.ManagedFieldsEntry) *LabelChange {
	return specWriter(entries, "taints")
}

// specWriter is the last writer of a field of the node's spec.
func specWriter(entries []metav1.ManagedFieldsEntry, field string) *LabelChange {
	needle := []byte(`"f:` + field + `"`)
	return lastWriters(entries, []fieldpath.Path{fieldpath.MakePathOrDie("spec", field)}, func(raw []byte) bool { return bytes.Contains(raw, needle) })[0]
}

// SpecNeedles are the managedFields names a reader looks for to trace the
// node's writers of spec (CordonFrom, TainterFrom).
var SpecNeedles = []string{"f:unschedulable", "f:taints"}

// TraceSpec sets who cordoned and who tainted the node, from its
// managedFields, when it is cordoned or tainted.
func (n *Node) TraceSpec(entries []metav1.ManagedFieldsEntry) {
	if n.Unschedulable {
		n.Cordon = CordonFrom(entries)
	}
	if len(n.Taints) > 0 {
		n.Tainter = TainterFrom(entries)
	}
}

// lastWriters finds, for each path, the latest entry that owns it (nil when
// none does), parsing only the entries whose raw fields names accepts.
// Entries of a subresource (the kubelet's status) and without a time are
// left out.
func lastWriters(entries []metav1.ManagedFieldsEntry, paths []fieldpath.Path, names func([]byte) bool) []*LabelChange {
	out := make([]*LabelChange, len(paths))
	for _, e := range entries {
		if e.FieldsV1 == nil || e.Time == nil || e.Subresource != "" || !names(e.FieldsV1.Raw) {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue // a malformed entry says nothing
		}
		for i, p := range paths {
			if set.Has(p) && (out[i] == nil || e.Time.After(out[i].Time)) {
				out[i] = &LabelChange{Manager: e.Manager, Time: e.Time.UTC()}
			}
		}
	}
	return out
}
