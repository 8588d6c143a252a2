package explain_test

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/operand"
)

func TestOrderReason(t *testing.T) {
	i := slices.IndexFunc(operand.AllRules, func(r operand.Rule) bool { return r.Finding == "toolkit-without-driver" })
	for _, tc := range []struct {
		rule operand.Rule
		want string
	}{
		{operand.DeviceRule, "a device-plugin pod runs here and no container-toolkit pod does"},
		{operand.AllRules[i], "a container-toolkit pod runs here and no driver pod does, and its driver label is neither false nor pre-installed: the host has none"},
	} {
		if got := explain.Order(tc.rule); got.Code != explain.BrokenOrder || got.Message != tc.want {
			t.Errorf("%s: %+v, want %q", tc.rule.Finding, got, tc.want)
		}
	}
}
