package operand

import (
	"slices"
	"testing"
)

// Every init container of every release belongs to a known operand, waits
// for one, and names in Past an init container that operand runs in that
// release.
func TestInitsNameKnownOperands(t *testing.T) {
	for _, r := range Releases {
		seen := map[[2]string]bool{}
		for _, i := range r.Inits() {
			if _, err := Lookup(Real, i.Operand); err != nil {
				t.Errorf("%s %+v: %v", r.Version, i, err)
			}
			if seen[[2]string{i.Operand, i.Container}] {
				t.Errorf("%s %+v listed twice", r.Version, i)
			}
			seen[[2]string{i.Operand, i.Container}] = true
			if i.WaitsOn == "" {
				if i.Past != "" {
					t.Errorf("%s %+v: Past without WaitsOn", r.Version, i)
				}
				continue
			}
			if _, err := Lookup(Real, i.WaitsOn); err != nil {
				t.Errorf("%s %+v: %v", r.Version, i, err)
			}
			if i.Past == "" {
				continue
			}
			found := false
			for _, j := range r.InitsOf(i.WaitsOn) {
				found = found || j.Container == i.Past
			}
			if !found {
				t.Errorf("%s %+v: %s runs no init container %s", r.Version, i, i.WaitsOn, i.Past)
			}
		}
	}
}

// The operator validator's init containers, release by release, as each
// tag's assets/state-operator-validation/0500_daemonset.yaml lists them
// (with GDS and GDRCopy on, so that the controller leaves them all in), and
// GFD's as assets/gpu-feature-discovery/0500_daemonset.yaml does.
func TestReleaseInits(t *testing.T) {
	containers := func(r Release, name string) (out []string) {
		for _, i := range r.InitsOf(name) {
			out = append(out, i.Container)
		}
		return out
	}
	want := map[string][2][]string{
		"v24.9": {{"driver-validation", "nvidia-fs-validation", "toolkit-validation", "cuda-validation", "plugin-validation"},
			{"toolkit-validation", "gpu-feature-discovery-imex-init", "config-manager-init"}},
		"v25.3": {{"driver-validation", "nvidia-fs-validation", "toolkit-validation", "cuda-validation", "plugin-validation"},
			{"toolkit-validation", "config-manager-init"}},
		"v25.10": {{"driver-validation", "nvidia-fs-validation", "gdrcopy-validation", "toolkit-validation", "cuda-validation", "plugin-validation"},
			{"toolkit-validation", "config-manager-init"}},
		"v26.3": {{"driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"},
			{"toolkit-validation", "config-manager-init"}},
		"v26.7": {{"driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"},
			{"toolkit-validation", "config-manager-init"}},
	}
	if len(want) != len(Releases) {
		t.Fatalf("%d releases, %d expected", len(Releases), len(want))
	}
	for _, r := range Releases {
		w, ok := want[r.Version]
		if !ok {
			t.Errorf("release %s not expected", r.Version)
			continue
		}
		if got := containers(r, OperatorValidator); !slices.Equal(got, w[0]) {
			t.Errorf("%s validator: %v, want %v", r.Version, got, w[0])
		}
		if got := containers(r, GPUFeatureDiscovery); !slices.Equal(got, w[1]) {
			t.Errorf("%s GFD: %v, want %v", r.Version, got, w[1])
		}
	}
}
