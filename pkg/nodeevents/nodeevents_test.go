package nodeevents

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

func v(missing, findings []string) *verdict.Verdict {
	out := &verdict.Verdict{Node: "n", Audit: judge.NodeAudit{Node: "n", Missing: missing}, Order: judge.NodeOrder{Node: "n", Findings: findings},
		Explain: &explain.Report{}}
	for _, m := range missing {
		out.Explain.Missing = append(out.Explain.Missing, explain.Missing{Node: "n", Operand: m, Reasons: []explain.Reason{{Code: explain.PodPending, Message: "pod p is Pending on the node"}}})
	}
	return out
}

func TestEventsOfAChange(t *testing.T) {
	rules := operand.AllRules
	for _, tc := range []struct {
		name          string
		before, after *verdict.Verdict
		want          []string
	}{
		{"nothing changed", v([]string{"driver"}, nil), v([]string{"driver"}, nil), nil},
		{"a new node with findings", nil, v([]string{"driver"}, []string{"device-plugin-without-toolkit"}), []string{
			"Warning OperandMissing driver is not running on the node (pod p is Pending on the node)",
			"Warning OrderViolation device-plugin-without-toolkit: device-plugin runs without container-toolkit",
		}},
		{"one starts, one ends", v([]string{"driver"}, []string{"toolkit-without-driver"}), v([]string{"dcgm-exporter"}, nil), []string{
			"Warning OperandMissing dcgm-exporter is not running on the node (pod p is Pending on the node)",
			"Normal OperandRunning driver is no longer missing",
			"Normal OrderRestored toolkit-without-driver: resolved",
		}},
	} {
		var got []string
		for _, e := range eventsOf(tc.before, tc.after, rules) {
			if e.ref.Kind != "Node" || e.ref.Name != "n" || string(e.ref.UID) != "n" {
				t.Errorf("%s: event on %+v, want the node", tc.name, e.ref)
			}
			got = append(got, fmt.Sprintf("%s %s %s", e.kind, e.reason, e.message))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
