package provision

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The out/ files of SPEC.md that up and optout write.
const (
	RosterFile = "roster.txt"
	DriverFile = "driver.txt"
	OptOutFile = "optout.txt"
)

// DesiredPath is where a DaemonSet's controller reports how many nodes should run its pod.
const DesiredPath = "{.status.desiredNumberScheduled}"

// RosterText is out/roster.txt: one "<operand>=<label key>" line per operand, in roster order.
func RosterText(roster []operand.Operand) []byte {
	var b bytes.Buffer
	for _, o := range roster {
		fmt.Fprintf(&b, "%s=%s\n", o.Name, o.LabelKey())
	}
	return b.Bytes()
}

// DriverText is out/driver.txt: the driver DaemonSet's desiredNumberScheduled as
// read from the API, and the GPU nodes it does not run on, comma separated
// (one line, empty when there is none).
func DriverText(desired string, skipped []string) []byte {
	return fmt.Appendf(nil, "DESIRED=%s\nSKIPPED=%s\n", desired, strings.Join(skipped, ","))
}

// OptOutText is out/optout.txt: desiredNumberScheduled before and after the change.
func OptOutText(c Change) []byte {
	return fmt.Appendf(nil, "BEFORE=%s\nAFTER=%s\n", c.Before, c.After)
}

// readPath evaluates a kubectl-style JSONPath template against an API object,
// as `kubectl get -o jsonpath=...` does.
func readPath(obj runtime.Object, template string) (string, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", err
	}
	jp := jsonpath.New("read")
	if err := jp.Parse(template); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := jp.Execute(&b, u); err != nil {
		return "", fmt.Errorf("jsonpath %s: %w", template, err)
	}
	return b.String(), nil
}
