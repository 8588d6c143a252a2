package provision

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
)

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
func OptOutText(c plan.Count) []byte {
	return fmt.Appendf(nil, "BEFORE=%s\nAFTER=%s\n", c.Before, c.After)
}
