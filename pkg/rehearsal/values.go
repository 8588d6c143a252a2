package rehearsal

import (
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/operand"
)

// pauseValue is what the driver manager writes on a deploy label it pauses
// (k8s-driver-manager cmd/driver-manager maybeSetPaused): "true" becomes the
// pause, a value already paused stays, "false" and "" stay, any other value
// gets the pause appended after "_".
func pauseValue(v string) string {
	paused := operand.DriverUpgrade.Value
	switch {
	case v == "", v == "false", strings.Contains(v, paused):
		return v
	case v == "true":
		return paused
	}
	return v + "_" + paused
}

// resumeValue is what it writes back once the driver is reloaded
// (maybeSetTrue): the pause taken off again.
func resumeValue(v string) string {
	if v == operand.DriverUpgrade.Value {
		return "true"
	}
	return strings.Trim(strings.ReplaceAll(v, operand.DriverUpgrade.Value, ""), "_")
}

// pauses are the deploy labels of a node the driver manager changes, with
// the value it writes: those of the operands it pauses that the node has.
// The driver manager also writes "" for each of its labels the node lacks;
// the rehearsal leaves those out, so that the node keeps only labels someone
// owns and gpuops reset can take off.
func pauses(labels map[string]string) map[string]string {
	out := map[string]string{}
	for _, o := range operand.DriverUpgrade.Operands {
		key := operand.LabelPrefix + o
		if v, ok := labels[key]; ok && pauseValue(v) != v {
			out[key] = pauseValue(v)
		}
	}
	return out
}

// resumes are the labels the driver manager writes back after pauses.
func resumes(paused map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range paused {
		out[k] = resumeValue(v)
	}
	return out
}

// keys lists a label map's keys in order, for a step's words.
func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, strings.TrimPrefix(k, operand.LabelPrefix))
	}
	slices.Sort(out)
	return out
}
