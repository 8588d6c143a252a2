package health

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The chain derived from the rules and init containers puts each operand
// after what it waits for, and the validator last of its stack: its
// plugin-validation waits for the device plugin.
func TestChainOrder(t *testing.T) {
	c := newChain(operand.Real, operand.Newest(), nil)
	before := func(a, b string) {
		t.Helper()
		if c.rank[a] >= c.rank[b] {
			t.Errorf("%s (rank %d) not before %s (rank %d)", a, c.rank[a], b, c.rank[b])
		}
	}
	before(operand.Driver, operand.ContainerToolkit)
	before(operand.ContainerToolkit, operand.DevicePlugin)
	for _, o := range []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGM, operand.DCGMExporter, operand.MIGManager} {
		before(o, operand.OperatorValidator)
	}
	before("vfio-manager", "sandbox-validator")
	before(operand.VGPUManager, operand.VGPUDeviceManager)
	before(operand.VGPUDeviceManager, "sandbox-validator")
	before("sandbox-validator", "sandbox-device-plugin")
	before(operand.Driver, operand.DRADriver)
	before(operand.DRADriver, "dra-validator")
	if !slices.IsSortedFunc(c.ops, func(a, b operand.Operand) int { return c.rank[a.Name] - c.rank[b.Name] }) {
		t.Error("operands not in rank order")
	}
}
