package snapshot

import (
	"bytes"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

// NVIDIADriver is what a judge needs of an NVIDIADriver
// (nvidiadrivers.nvidia.com/v1alpha1): the kind of driver it renders.
type NVIDIADriver struct {
	Name       string
	DriverType string // gpu, vgpu or vgpu-host-manager
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
// owns are left out.
func LabelChangesFrom(entries []metav1.ManagedFieldsEntry, keys []string) map[string]LabelChange {
	out := map[string]LabelChange{}
	for _, e := range entries {
		if e.FieldsV1 == nil || e.Time == nil || e.Subresource != "" {
			continue
		}
		// Parse only entries that name a key somewhere: most own other
		// labels (NFD's own a hundred), and parsing is most of the cost.
		if !slices.ContainsFunc(keys, func(k string) bool { return bytes.Contains(e.FieldsV1.Raw, []byte(`"f:`+k+`"`)) }) {
			continue
		}
		var set fieldpath.Set
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue // a malformed entry says nothing
		}
		for _, k := range keys {
			if !set.Has(fieldpath.MakePathOrDie("metadata", "labels", k)) {
				continue
			}
			if prev, ok := out[k]; !ok || e.Time.After(prev.Time) {
				out[k] = LabelChange{Manager: e.Manager, Time: e.Time.UTC()}
			}
		}
	}
	return out
}
