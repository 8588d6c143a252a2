package operand_test

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/operand"
)

// Names, DaemonSets and columns must each be unique across the real catalog,
// and the lab's five must stay its head, unchanged.
func TestRealCatalog(t *testing.T) {
	if !slices.EqualFunc(operand.Real[:len(operand.Lab)], operand.Lab, func(a, b operand.Operand) bool {
		return a.Name == b.Name && a.DaemonSet == b.DaemonSet && a.Column == b.Column
	}) {
		t.Fatal("operand.Real must start with operand.Lab")
	}
	seen := map[string]string{}
	for _, o := range operand.Real {
		for kind, v := range map[string]string{"name": o.Name, "daemonset": o.DaemonSet, "column": o.Column} {
			if prev, dup := seen[kind+"/"+v]; dup {
				t.Errorf("%s %q used by %s and %s", kind, v, prev, o.Name)
			}
			seen[kind+"/"+v] = o.Name
		}
	}
}

func TestRulesFor(t *testing.T) {
	var got []string
	for _, r := range operand.RulesFor(operand.Lab, operand.AllRules) {
		got = append(got, r.Finding)
	}
	want := []string{"device-plugin-without-toolkit", "gpu-feature-discovery-without-toolkit", "dcgm-exporter-without-toolkit", "toolkit-without-driver"}
	if !slices.Equal(got, want) {
		t.Errorf("rules for the lab roster: %q, want %q", got, want)
	}
}

func TestHostProvides(t *testing.T) {
	r := operand.AllRules[len(operand.AllRules)-1]
	key := operand.LabelPrefix + operand.Driver
	for v, want := range map[string]bool{"false": true, "pre-installed": true, "true": false, "": false, "False": false, "paused-for-driver-upgrade": false} {
		if got := r.HostProvides(map[string]string{key: v}); got != want {
			t.Errorf("driver label %q: host provides = %v, want %v", v, got, want)
		}
	}
	if r.HostProvides(nil) {
		t.Error("a node without the driver label has no host driver")
	}
}

func TestDaemonSets(t *testing.T) {
	o := operand.Operand{Name: "driver", DaemonSet: "a", Variants: []string{"b", "c"}}
	if got := o.DaemonSets(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("DaemonSets() = %q", got)
	}
	if !o.RunBy("c") || !o.RunBy("a") || o.RunBy("d") {
		t.Error("RunBy must accept the DaemonSet and its variants only")
	}
}
