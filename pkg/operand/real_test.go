package operand_test

import (
	"slices"
	"strings"
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
	i := slices.IndexFunc(operand.AllRules, func(r operand.Rule) bool { return r.Finding == "toolkit-without-driver" })
	r := operand.AllRules[i]
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

// Every rule, switch and pause names operands of the catalog, so no fact
// about an operand can drift from its name.
func TestCatalogNamesAreKnown(t *testing.T) {
	known := func(name string) bool {
		_, err := operand.Lookup(operand.Real, name)
		return err == nil
	}
	for _, r := range operand.AllRules {
		if !known(r.Operand) || !known(r.Needs) {
			t.Errorf("rule %s names an operand outside the catalog", r.Finding)
		}
	}
	for name := range operand.Switches {
		if !known(name) {
			t.Errorf("switch for unknown operand %q", name)
		}
	}
	for _, p := range operand.Pauses {
		for _, name := range p.Operands {
			if !known(name) {
				t.Errorf("%s pauses unknown operand %q", p.Value, name)
			}
		}
	}
	for config, names := range operand.WorkloadConfigs {
		for _, name := range names {
			if !known(name) && !slices.Contains(operand.LabelOnly, name) {
				t.Errorf("workload config %s deploys unknown key %q", config, name)
			}
		}
	}
	for _, key := range operand.LabelOnly {
		if known(key) {
			t.Errorf("label-only key %q is also an operand", key)
		}
	}
	// Every operand of the ClusterPolicy stack has a switch but the validator
	// (always on) and the DRA stack (a GPUCluster's).
	for _, o := range operand.Real {
		_, has := operand.Switches[o.Name]
		free := o.Name == operand.OperatorValidator || strings.HasPrefix(o.Name, "dra-") || strings.HasSuffix(o.Name, "-dra")
		if has == free {
			t.Errorf("operand %s: switch %v", o.Name, has)
		}
	}
}

func TestPauseOf(t *testing.T) {
	for value, want := range map[string]struct{ pause, restores string }{
		"paused-for-driver-upgrade":               {"paused-for-driver-upgrade", "true"},
		"pre-installed_paused-for-driver-upgrade": {"paused-for-driver-upgrade", "pre-installed"},
		"paused-for-mig-change":                   {"paused-for-mig-change", "true"},
		"paused-for-vgpu-change":                  {"paused-for-vgpu-change", "true"},
		"x_paused-for-mig-change":                 {}, // the MIG manager never suffixes
		"truepaused-for-driver-upgrade":           {}, // no "_" before the pause
		"true":                                    {},
		"":                                        {},
		"Paused-for-driver-upgrade":               {},
	} {
		p, restores, ok := operand.PauseOf(value)
		if ok != (want.pause != "") || p.Value != want.pause || restores != want.restores {
			t.Errorf("PauseOf(%q) = %q, %q, %v; want %q, %q", value, p.Value, restores, ok, want.pause, want.restores)
		}
	}
}

func TestIsPaused(t *testing.T) {
	for value, want := range map[string]bool{
		"paused-for-driver-upgrade":               true,
		"paused-for-mig-change":                   true,
		"paused-for-vgpu-change":                  true,
		"true_paused-for-driver-upgrade":          true,
		"pre-installed_paused-for-driver-upgrade": true,
		"foo_paused-for-driver-upgrade":           true,
		"x_paused-for-mig-change":                 false, // the MIG manager never suffixes
		"x_paused-for-vgpu-change":                false,
		"paused-for-something-else":               false, // a prefix is no pause
		"paused-for-driver-upgrade_x":             false,
		"Paused-for-driver-upgrade":               false,
		"true":                                    false,
		"false":                                   false,
		"":                                        false,
		"pre-installed":                           false,
	} {
		if got := operand.IsPaused(value); got != want {
			t.Errorf("IsPaused(%q) = %v, want %v", value, got, want)
		}
	}
}

func TestAsks(t *testing.T) {
	key := operand.LabelPrefix + operand.Driver
	driver, _ := operand.Lookup(operand.Lab, operand.Driver)
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{key: "true"}, true},
		{map[string]string{key: "True"}, false},
		{map[string]string{key: "false"}, false},
		{map[string]string{key: ""}, false},
		{map[string]string{key: " true"}, false},
		{map[string]string{key: "paused-for-driver-upgrade"}, false},
		{map[string]string{operand.LabelPrefix + operand.DevicePlugin: "true"}, false},
		{nil, false},
	} {
		if got := operand.Asks(tc.labels, operand.Driver); got != tc.want || driver.AskedBy(tc.labels) != got {
			t.Errorf("Asks(%v) = %v, AskedBy %v; want %v", tc.labels, got, driver.AskedBy(tc.labels), tc.want)
		}
	}
}

func TestWorkloadConfigOf(t *testing.T) {
	for _, tc := range []struct {
		label   string // "" for none
		sandbox bool
		want    string
	}{
		{"", true, operand.Container},
		{operand.VMPassthrough, true, operand.VMPassthrough},
		{operand.VMVGPU, true, operand.VMVGPU},
		{"vm-other", true, operand.Container},
		{operand.VMPassthrough, false, operand.Container}, // sandbox workloads off: the label is ignored
	} {
		labels := map[string]string{}
		if tc.label != "" {
			labels[operand.WorkloadConfigLabel] = tc.label
		}
		if got := operand.WorkloadConfigOf(labels, tc.sandbox); got != tc.want {
			t.Errorf("label %q, sandbox %v: %s, want %s", tc.label, tc.sandbox, got, tc.want)
		}
	}
}

// What each release's labeller does with an empty deploy label: the newest
// sets its workload config's to "true", older ones keep them (Upstream:
// addGPUStateLabels in controllers/state_manager.go, v26.7.0 against
// v26.3.0); before v26.7 there is no client label, before v26.3 no kata
// device plugin.
func TestEmptyLabel(t *testing.T) {
	release := func(v string) operand.Release {
		r, _ := operand.ReleaseOf(v)
		return r
	}
	newest, v263, v2510 := operand.Newest(), release("v26.3.0"), release("v25.10.0")
	for _, tc := range []struct {
		release            operand.Release
		config, mode, name string
		want               operand.Labelling
	}{
		{newest, operand.Container, "", operand.DevicePlugin, operand.SetsTrue},
		{newest, operand.Container, "", "sandbox-device-plugin", operand.Removes},
		{newest, operand.Container, "", "kata-sandbox-device-plugin", operand.Removes},
		{newest, operand.Container, "", operand.MIGManager, operand.Unjudged},
		{newest, operand.Container, "", operand.DRADriver, operand.Unjudged},
		{newest, operand.Container, "", "unknown-operand", operand.Unjudged},
		{newest, operand.VMPassthrough, "", operand.DevicePlugin, operand.Removes},
		{newest, operand.VMPassthrough, "", operand.Driver, operand.Removes},
		{newest, operand.VMPassthrough, "", operand.MIGManager, operand.Removes},
		{newest, operand.VMPassthrough, "", operand.VGPUManager, operand.Removes},
		{newest, operand.VMPassthrough, "", "vfio-manager", operand.SetsTrue},
		{newest, operand.VMPassthrough, "kubevirt", "sandbox-device-plugin", operand.SetsTrue},
		{newest, operand.VMPassthrough, "", "kata-sandbox-device-plugin", operand.Removes},
		{newest, operand.VMPassthrough, "kata", "sandbox-device-plugin", operand.Removes},
		{newest, operand.VMPassthrough, "kata", "kata-sandbox-device-plugin", operand.SetsTrue},
		{newest, operand.VMVGPU, "", operand.VGPUManager, operand.SetsTrue},
		{newest, operand.VMVGPU, "kata", "sandbox-device-plugin", operand.SetsTrue},
		{newest, operand.VMVGPU, "", "vfio-manager", operand.Removes},
		{newest, operand.VMVGPU, "", operand.ContainerToolkit, operand.Removes},
		{newest, operand.Container, "", "client", operand.SetsTrue},
		{v263, operand.Container, "", operand.DevicePlugin, operand.Keeps},
		{v263, operand.Container, "", "client", operand.Unjudged},
		{v263, operand.VMPassthrough, "kata", "kata-sandbox-device-plugin", operand.Keeps},
		{v263, operand.VMPassthrough, "kata", "sandbox-device-plugin", operand.Removes},
		{v2510, operand.Container, "", "sandbox-device-plugin", operand.Removes},
		{v2510, operand.VMPassthrough, "kata", "sandbox-device-plugin", operand.Keeps},
		{v2510, operand.VMPassthrough, "kata", "kata-sandbox-device-plugin", operand.Unjudged},
		{v2510, operand.VMVGPU, "", operand.VGPUManager, operand.Keeps},
	} {
		if got := tc.release.EmptyLabel(tc.config, tc.mode, tc.name); got != tc.want {
			t.Errorf("%s EmptyLabel(%s, %q, %s) = %d, want %d", tc.release.Version, tc.config, tc.mode, tc.name, got, tc.want)
		}
	}
}

func TestPaused(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       bool
	}{
		{operand.LabelPrefix + "device-plugin", "paused-for-mig-change", true},
		{operand.LabelPrefix + "nvsm", "paused-for-driver-upgrade", true},
		{operand.LabelPrefix + "driver", "pre-installed", false},
		{"nvidia.com/mig.config.state", "paused-for-mig-change", false},
	} {
		if got := operand.Paused(tc.key, tc.value); got != tc.want {
			t.Errorf("Paused(%q, %q) = %v", tc.key, tc.value, got)
		}
	}
}

func TestRuleOf(t *testing.T) {
	rules := operand.AllRules
	if r := operand.RuleOf(rules, "toolkit-without-driver"); r.Operand != operand.ContainerToolkit || r.Needs != operand.Driver {
		t.Fatalf("RuleOf(toolkit-without-driver) = %+v", r)
	}
	if r := operand.RuleOf(rules, "nope"); !slices.Equal([]string{r.Finding, r.Operand}, []string{"nope", ""}) {
		t.Fatalf("RuleOf(nope) = %+v", r)
	}
}
