package health

import (
	"fmt"
	"slices"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
)

// DriverOnHost is a note, not a cause: the driver pod waits in its driver
// manager, which said it found a driver installed on the host
// (signature.DriverPreinstalled). The host's driver serves the node; the
// operands that need a driver are judged on their own (NVIDIA/gpu-operator#381).
const DriverOnHost = "driver-on-host"

// driverManager is the driver pod's first init container, which checks for
// a driver on the host before the driver container may install one
// (NVIDIA/gpu-operator v26.7.0 assets/state-driver/0500_daemonset.yaml).
const driverManager = "k8s-driver-manager"

// hostDriver clears the driver's failure when it is only that its pod
// waits in k8s-driver-manager, and that container (its log, its
// termination message) or an Event on the pod said the host has a driver
// already: v0.4.0 then sleeps in the init container, later releases label
// the node pre-installed and exit, until the DaemonSet drops the pod.
// Nothing else is excused: a pause, a failed driver upgrade, a pod in its
// driver container, a wait in k8s-driver-manager without that line, or the
// line from another pod or container all stay the driver's failure. It
// returns the note and the hint that showed the line; nil when the rule
// does not apply.
func (c chain) hostDriver(links []link) (*Cause, *signature.Hint) {
	d := c.index(operand.Driver)
	if d < 0 {
		return nil, nil
	}
	l := &links[d]
	if l.pause != nil || l.pod == nil || l.code != InitWaiting && l.code != CrashLoop {
		return nil, nil
	}
	h := l.pod.Health
	if h.Init != driverManager || h.Container != "" && h.Container != driverManager {
		return nil, nil
	}
	i := slices.IndexFunc(l.hints, func(x signature.Hint) bool {
		return x.Code == signature.DriverPreinstalled && x.Pod == l.pod.Name && (x.Container == driverManager || x.From == signature.FromEvent)
	})
	if i < 0 {
		return nil, nil
	}
	hint := l.hints[i]
	note := &Cause{Code: DriverOnHost, Operand: operand.Driver, Message: fmt.Sprintf(
		"pod %s waits in %s, which found a driver installed on the host (%q): the host's driver serves the node; label it %s=pre-installed so the operator renders no driver pod there",
		l.pod.Name, driverManager, hint.Line, l.op.LabelKey())}
	l.code, l.message, l.evidence, l.hints = "", "", "", nil
	return note, &hint
}
