package labspec_test

import (
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
)

// Values YAML 1.1 would quietly turn into booleans are refused; only the
// literal true and false pass.
func TestOperandValuesMustBeLiteralBooleans(t *testing.T) {
	for _, v := range []string{"yes", "no", "on", "off", "y", "True", "FALSE", "~", "", "null"} {
		spec := "namespace: x\nnodes:\n- name: a\n  operands: {device-plugin: true, driver: " + v + "}\n"
		_, err := labspec.Parse([]byte(spec), operand.Lab)
		if err == nil || !strings.Contains(err.Error(), "node a: operand driver: value") || !strings.Contains(err.Error(), "is not true or false") {
			t.Errorf("driver: %q: err = %v, want a refusal naming node and operand", v, err)
		}
	}
	for _, v := range []string{"true", "false"} {
		lab, err := labspec.Parse([]byte("namespace: x\nnodes: [{name: a, operands: {driver: "+v+"}}]\n"), operand.Lab)
		if err != nil || lab.Nodes[0].Operands["driver"] != (v == "true") {
			t.Errorf("driver: %s: %+v, %v", v, lab, err)
		}
	}
}
