package operand

import (
	"strings"
	"testing"
)

func TestDeployLabel(t *testing.T) {
	labels := map[string]string{LabelPrefix + "container-toolkit": "true", LabelPrefix + "driver": "false"}
	for _, tc := range []struct {
		name, value string
		ok, asks    bool
	}{
		{"container-toolkit", "true", true, true},
		{"driver", "false", true, false},
		{"dcgm-exporter", "", false, false},
	} {
		if v, ok := DeployLabel(labels, tc.name); v != tc.value || ok != tc.ok || Asks(labels, tc.name) != tc.asks {
			t.Errorf("%s: DeployLabel = %q, %v; Asks = %v; want %q, %v, %v", tc.name, v, ok, Asks(labels, tc.name), tc.value, tc.ok, tc.asks)
		}
	}
}

// The named accessors find the operand of their name in either catalog
// roster, and between them name every operand of the lab.
func TestRosterAccessors(t *testing.T) {
	names := []string{Driver, ContainerToolkit, DevicePlugin, GPUFeatureDiscovery, DCGMExporter}
	for _, r := range []Roster{Lab, Real} {
		got := []Operand{r.Driver(), r.ContainerToolkit(), r.DevicePlugin(), r.GPUFeatureDiscovery(), r.DCGMExporter()}
		for i, o := range got {
			if o.Name != names[i] || o.DaemonSet == "" {
				t.Errorf("accessor %d = %+v, want the operand %s", i, o, names[i])
			}
		}
	}
	if Names(Lab) != strings.Join(names, ", ") {
		t.Errorf("Lab = %s, want exactly the named %v", Names(Lab), names)
	}
	defer func() {
		if recover() == nil {
			t.Error("a roster without a driver returned one")
		}
	}()
	Roster{}.Driver()
}
