package explain

import (
	"fmt"
	"strings"

	"github.com/gpuops/gpuops/pkg/operand"
)

// BrokenOrder is the reason code of an order finding.
const BrokenOrder = "broken-order"

// Order says what a broken start-up rule means on a node, for reports that
// give every finding a reason.
func Order(r operand.Rule) Reason {
	msg := fmt.Sprintf("a %s pod runs here and no %s pod does", r.Operand, r.Needs)
	if len(r.HostValues) > 0 {
		msg += fmt.Sprintf(", and its %s label is neither %s: the host has none", r.Needs, strings.Join(r.HostValues, " nor "))
	}
	return Reason{Code: BrokenOrder, Message: msg}
}
