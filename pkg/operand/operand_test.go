package operand

import "testing"

func TestDeployLabel(t *testing.T) {
	const long = "a-name-far-longer-than-any-operand-of-the-catalog-has"
	labels := map[string]string{LabelPrefix + "container-toolkit": "true", LabelPrefix + "driver": "false", LabelPrefix + long: "true"}
	for _, tc := range []struct {
		name, value string
		ok, asks    bool
	}{
		{"container-toolkit", "true", true, true},
		{"driver", "false", true, false},
		{"dcgm-exporter", "", false, false},
		// A name longer than the key's stack buffer.
		{long, "true", true, true},
	} {
		if v, ok := DeployLabel(labels, tc.name); v != tc.value || ok != tc.ok || Asks(labels, tc.name) != tc.asks {
			t.Errorf("%s: DeployLabel = %q, %v; Asks = %v; want %q, %v, %v", tc.name, v, ok, Asks(labels, tc.name), tc.value, tc.ok, tc.asks)
		}
	}
	// The judges look up every operand's label on every node.
	if n := testing.AllocsPerRun(100, func() { Asks(labels, "container-toolkit") }); n != 0 {
		t.Errorf("Asks allocates %v times a call, want none", n)
	}
}
