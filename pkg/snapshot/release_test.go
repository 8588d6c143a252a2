package snapshot

import (
	"strings"
	"testing"
)

// The operator's image tag decides; without one, the CRD's schema when it
// was read (none of the release's fields: the oldest, said so); without
// either, the newest, silently. A tag that names no release is the newest
// with the tag's note, the schema unread.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		fields  []string
		want    string
		note    string // a part of the note; empty: none
	}{
		{"the tag", "v25.3.4", []string{"operator.metrics"}, "v25.3", ""},
		{"a tag of no release", "latest", nil, "v26.7", "names no release"},
		{"the schema", "", []string{"driver.kernelModuleType", "driver.secretEnv"}, "v25.10", "the oldest release whose ClusterPolicy CRD serves spec.driver.secretEnv"},
		{"a schema of no later field", "", []string{}, "v24.9", "it may be older"},
		{"neither", "", nil, "v26.7", ""},
	} {
		s := &Snapshot{OperatorVersion: tc.version, CRDFields: tc.fields}
		r, note := s.Release()
		if r.Version != tc.want || tc.note == "" && note != "" || !strings.Contains(note, tc.note) {
			t.Errorf("%s: %s (%q), want %s with %q", tc.name, r.Version, note, tc.want, tc.note)
		}
	}
}
