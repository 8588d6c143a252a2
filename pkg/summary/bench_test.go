package summary_test

import (
	"testing"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
)

// The fleet view at 5,000 nodes against its baseline, what audit --explain
// computes from the same snapshot: the summary adds the order rules on every
// node, the states of every cell and the grouping.
func BenchmarkBuild(b *testing.B) {
	s := fleettest.Snapshot(5000)
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	b.Run("baseline-audit-explain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			explain.Explain(s, operand.Lab, judge.Audit(s, operand.Lab), explain.Clock{})
		}
	})
	b.Run("summary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := judged(s, operand.Lab, rules, fleettest.GroupBy, explain.Clock{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
