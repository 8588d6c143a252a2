package operand

import (
	"os"
	"strings"
	"testing"
)

// ReleaseOf names the release line of a tag, and says so once when it
// judges by another: newer, older, between two, or no release at all.
func TestReleaseOf(t *testing.T) {
	for _, tc := range []struct {
		tag, want string
		note      string // a part of the note; empty: none
	}{
		{"", "v26.7", ""},
		{"v26.7.0", "v26.7", ""},
		{"v25.10.1", "v25.10", ""},
		{"25.3.4", "v25.3", ""},
		{"v24.9.2-ubi8", "v24.9", ""},
		{"v26.3", "v26.3", ""},
		{"v27.1.0", "v26.7", "newer than any release gpuops knows: judged as v26.7"},
		{"v26.10.0", "v26.7", "newer than any release"},
		{"v25.6.0", "v25.3", "no release gpuops knows: judged as v25.3, the one before it"},
		{"v23.9.2", "v24.9", "older than any release gpuops knows: judged as v24.9"},
		{"latest", "v26.7", `"latest" names no release: judged as v26.7`},
		{"main-latest", "v26.7", "names no release"},
		{"sha256:3f1c", "v26.7", "names no release"},
	} {
		r, note := ReleaseOf(tc.tag)
		if r.Version != tc.want {
			t.Errorf("ReleaseOf(%q) = %s, want %s", tc.tag, r.Version, tc.want)
		}
		if tc.note == "" && note != "" || !strings.Contains(note, tc.note) {
			t.Errorf("ReleaseOf(%q) note %q, want one with %q", tc.tag, note, tc.note)
		}
	}
}

// Releases are in order, oldest first, each line once: ReleaseOf walks
// them from the newest down.
func TestReleasesOrdered(t *testing.T) {
	for i := 1; i < len(Releases); i++ {
		a, b := Releases[i-1], Releases[i]
		if a.year > b.year || a.year == b.year && a.minor >= b.minor {
			t.Errorf("%s listed before %s", a.Version, b.Version)
		}
		if r, _ := ReleaseOf(b.Version + ".0"); r.Version != b.Version {
			t.Errorf("%s.0 read as %s", b.Version, r.Version)
		}
	}
}

// Before v26.3 cc-manager's DaemonSet also selects nvidia.com/cc.capable=true
// (NVIDIA/gpu-operator v25.10.0 assets/state-cc-manager/0500_daemonset.yaml):
// a vm-passthrough node without it, whose deploy label the labeller sets
// all the same, does not ask for cc-manager there; from v26.3 it does.
func TestReleaseRoster(t *testing.T) {
	node := map[string]string{LabelPrefix + CCManager: "true"}
	capable := map[string]string{LabelPrefix + CCManager: "true", CCCapable: "true"}
	for _, tc := range []struct {
		tag                   string
		asked, askedByCapable bool
	}{
		{"v24.9.2", false, true},
		{"v25.10.1", false, true},
		{"v26.3.0", true, true},
		{"v26.7.0", true, true},
	} {
		r, _ := ReleaseOf(tc.tag)
		roster := r.Roster(Real)
		cc, err := Lookup(roster, CCManager)
		if err != nil {
			t.Fatal(err)
		}
		if got := cc.AskedBy(node); got != tc.asked {
			t.Errorf("%s: asked by a node without %s: %v, want %v", tc.tag, CCCapable, got, tc.asked)
		}
		if got := cc.AskedBy(capable); got != tc.askedByCapable {
			t.Errorf("%s: asked by a CC-capable node: %v, want %v", tc.tag, got, tc.askedByCapable)
		}
	}
	if !AskLabel(CCCapable) {
		t.Errorf("%s is not read with the deploy labels", CCCapable)
	}
	if base, _ := Lookup(Real, CCManager); base.Requires != "" {
		t.Errorf("Roster changed the catalog: %+v", base)
	}
}

// schemaTags reads testdata/clusterpolicy-fields.txt: the tags read, and,
// by tag, the fields its ClusterPolicy CRD serves of those some tags lack.
func schemaTags(t *testing.T) ([]string, map[string]map[string]bool) {
	t.Helper()
	raw, err := os.ReadFile("testdata/clusterpolicy-fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	served := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if rest, ok := strings.CutPrefix(line, "# tags: "); ok {
			tags = strings.Fields(rest)
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		for _, tag := range f[1:] {
			if served[tag] == nil {
				served[tag] = map[string]bool{}
			}
			served[tag][f[0]] = true
		}
	}
	if len(tags) == 0 {
		t.Fatal("testdata/clusterpolicy-fields.txt names no tag")
	}
	return tags, served
}

// Each release's SchemaFields are served from its .0 tag on and by no tag
// before; the CRD of every tag read is judged as that tag's release line.
func TestReleaseOfSchemaAtEveryTag(t *testing.T) {
	tags, served := schemaTags(t)
	for _, r := range Releases {
		for _, f := range r.SchemaFields {
			for _, tag := range tags {
				line, _ := ReleaseOf(tag)
				if want := line.year > r.year || line.year == r.year && line.minor >= r.minor; served[tag][f] != want {
					t.Errorf("%s: spec.%s served at %s: %v, want %v", r.Version, f, tag, served[tag][f], want)
				}
			}
		}
	}
	for _, tag := range tags {
		want, _ := ReleaseOf(tag)
		got, note := ReleaseOfSchema(func(f string) bool { return served[tag][f] })
		if got.Version != want.Version || !strings.Contains(note, "judged as "+want.Version+", the oldest") && !strings.Contains(note, "judged as "+want.Version+", as") {
			t.Errorf("the CRD of %s: judged as %s (%q), want %s", tag, got.Version, note, want.Version)
		}
	}
	if _, note := ReleaseOfSchema(func(string) bool { return false }); !strings.Contains(note, "may be older") {
		t.Errorf("a CRD with no field of a later release: note %q", note)
	}
}
