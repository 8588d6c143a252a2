package rehearsal

import (
	"maps"
	"testing"

	"github.com/gpuops/gpuops/pkg/operand"
)

// TestPauseAndResume: the driver manager's values, and that writing back
// what it paused restores every label as it was.
func TestPauseAndResume(t *testing.T) {
	paused := operand.DriverUpgrade.Value
	for v, want := range map[string]string{
		"true": paused, "false": "false", "": "", paused: paused,
		"paused-for-mig-change": "paused-for-mig-change_" + paused, "pre-installed": "pre-installed_" + paused,
	} {
		if got := pauseValue(v); got != want {
			t.Errorf("pauseValue(%q) = %q, want %q", v, got, want)
		}
		// A pause found already in place is resumed to "true", as upstream does.
		if got := resumeValue(pauseValue(v)); got != v && v != paused {
			t.Errorf("resumeValue(pauseValue(%q)) = %q", v, got)
		}
	}

	labels := map[string]string{
		operand.LabelPrefix + operand.Driver:              "true", // the driver manager never pauses the driver
		operand.LabelPrefix + operand.ContainerToolkit:    "true",
		operand.LabelPrefix + operand.DevicePlugin:        "true",
		operand.LabelPrefix + operand.DCGMExporter:        "false",
		operand.LabelPrefix + operand.GPUFeatureDiscovery: "paused-for-mig-change",
	}
	want := map[string]string{
		operand.LabelPrefix + operand.ContainerToolkit:    paused,
		operand.LabelPrefix + operand.DevicePlugin:        paused,
		operand.LabelPrefix + operand.GPUFeatureDiscovery: "paused-for-mig-change_" + paused,
	}
	got := pauses(labels)
	if !maps.Equal(got, want) {
		t.Errorf("pauses = %v, want %v", got, want)
	}
	for k, v := range resumes(got) {
		if labels[k] != v {
			t.Errorf("resumes: %s=%q, was %q", k, v, labels[k])
		}
	}
}

func TestBumpedImage(t *testing.T) {
	for in, want := range map[string]string{
		"nvcr.io/nvidia/driver:550.90.07-ubuntu22.04": "nvcr.io/nvidia/driver:" + UpgradeVersion + "-ubuntu22.04",
		"registry:5000/driver:550.90.07":              "registry:5000/driver:" + UpgradeVersion,
		"driver":                                      "driver:" + UpgradeVersion,
	} {
		if got := bumpedImage(in); got != want {
			t.Errorf("bumpedImage(%q) = %q, want %q", in, got, want)
		}
	}
}
