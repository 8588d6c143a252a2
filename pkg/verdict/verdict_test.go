package verdict_test

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

func TestRuleOf(t *testing.T) {
	rules := operand.AllRules
	if r := verdict.RuleOf(rules, "toolkit-without-driver"); r.Operand != operand.ContainerToolkit || r.Needs != operand.Driver {
		t.Fatalf("RuleOf(toolkit-without-driver) = %+v", r)
	}
	if r := verdict.RuleOf(rules, "nope"); !slices.Equal([]string{r.Finding, r.Operand}, []string{"nope", ""}) {
		t.Fatalf("RuleOf(nope) = %+v", r)
	}
}
