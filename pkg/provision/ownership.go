package provision

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Server-side apply records, per field manager, the fields it set
// (metadata.managedFields). gpuops reads that record to know what it owns:
// which labels it set, whether it created the namespace, whether anybody
// else shaped a DaemonSet it would write.

// Owner is another field manager and the fields of interest it owns.
type Owner struct {
	Manager string
	Fields  []string // field paths, sorted
}

func (o Owner) String() string {
	return fmt.Sprintf("%q (%s)", o.Manager, strings.Join(o.Fields, ", "))
}

// owned returns the fields that manager set with apply or update, outside
// subresources such as status (what the DaemonSet controller writes there is
// no claim on the object).
func owned(entries []metav1.ManagedFieldsEntry, manager string) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	for _, e := range entries {
		if e.Manager != manager || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("managed fields of %q: %w", manager, err)
		}
		set = set.Union(s)
	}
	return set, nil
}

// foreignOwners returns the managers other than self that own any of the
// fields in want, in manager order. want holds leaf fields only.
func foreignOwners(entries []metav1.ManagedFieldsEntry, self string, want *fieldpath.Set) ([]Owner, error) {
	var managers []string
	for _, e := range entries {
		if e.Manager != self && !slices.Contains(managers, e.Manager) {
			managers = append(managers, e.Manager)
		}
	}
	slices.Sort(managers)
	var out []Owner
	for _, m := range managers {
		theirs, err := owned(entries, m)
		if err != nil {
			return nil, err
		}
		shared := theirs.Leaves().Intersection(want)
		if shared.Empty() {
			continue
		}
		o := Owner{Manager: m}
		for p := range shared.All() {
			o.Fields = append(o.Fields, p.String())
		}
		slices.Sort(o.Fields)
		out = append(out, o)
	}
	return out, nil
}

// labelPaths is the set of fields of the given label keys.
func labelPaths(keys []string) *fieldpath.Set {
	set := &fieldpath.Set{}
	for _, k := range keys {
		set.Insert(fieldpath.MakePathOrDie("metadata", "labels", k))
	}
	return set
}
