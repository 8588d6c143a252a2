package summary_test

import (
	"reflect"
	"testing"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/summary"
)

// Total counts the groups of the same name together, over the operands
// and rules of any cluster, in the clusters' own orders.
func TestTotal(t *testing.T) {
	driver, toolkit, dcgm := operand.Lab.Driver(), operand.Lab.ContainerToolkit(), operand.Lab.DCGMExporter()
	west := summary.Fleet{GroupBy: "pool", Operands: []operand.Operand{driver, toolkit}, Groups: []summary.Group{
		{Name: "a100", Nodes: 2, Findings: 1, Operands: []summary.OperandCounts{
			{Operand: driver.Name, Counts: summary.Counts{2, 1, 1, 0, 0}}, {Operand: toolkit.Name, Counts: summary.Counts{2, 2, 0, 0, 0}},
		}, Order: []summary.RuleCount{{Finding: "r1", Nodes: 1}}, Health: &summary.HealthCounts{Ready: 1, Unusable: 1, Causes: []summary.CauseCount{{Code: "missing", Operand: "driver", Nodes: 1}}}, Upgrades: map[string]int{"done": 1, "waiting": 1}},
		{Name: summary.NoGroup, Nodes: 1, Operands: []summary.OperandCounts{{Operand: driver.Name}, {Operand: toolkit.Name}}, Order: []summary.RuleCount{{Finding: "r1"}}},
	}}
	east := summary.Fleet{GroupBy: "pool", Operands: []operand.Operand{driver, dcgm}, Groups: []summary.Group{
		{Name: "h100", Nodes: 1, Operands: []summary.OperandCounts{{Operand: driver.Name, Counts: summary.Counts{1, 1, 0, 0, 0}}, {Operand: dcgm.Name, Counts: summary.Counts{1, 1, 0, 0, 0}}},
			Order: []summary.RuleCount{{Finding: "r2"}}},
		{Name: "a100", Nodes: 3, Findings: 2, Operands: []summary.OperandCounts{
			{Operand: driver.Name, Counts: summary.Counts{3, 1, 2, 0, 0}}, {Operand: dcgm.Name, Counts: summary.Counts{0, 0, 0, 0, 3}},
		}, Order: []summary.RuleCount{{Finding: "r2", Nodes: 2}}, Health: &summary.HealthCounts{Unusable: 3, Causes: []summary.CauseCount{{Code: "crash-loop", Operand: "driver", Nodes: 2}, {Code: "missing", Operand: "driver", Nodes: 1}}}, Upgrades: map[string]int{"waiting": 2}},
	}}
	got := summary.Total([]summary.Fleet{west, east})
	want := summary.Fleet{GroupBy: "pool", Operands: []operand.Operand{driver, toolkit, dcgm}, Groups: []summary.Group{
		{Name: "a100", Nodes: 5, Findings: 3, Operands: []summary.OperandCounts{
			{Operand: driver.Name, Counts: summary.Counts{5, 2, 3, 0, 0}}, {Operand: toolkit.Name, Counts: summary.Counts{2, 2, 0, 0, 0}}, {Operand: dcgm.Name, Counts: summary.Counts{0, 0, 0, 0, 3}},
		}, Order: []summary.RuleCount{{Finding: "r1", Nodes: 1}, {Finding: "r2", Nodes: 2}}, Health: &summary.HealthCounts{Ready: 1, Unusable: 4, Causes: []summary.CauseCount{
			{Code: "crash-loop", Operand: "driver", Nodes: 2}, {Code: "missing", Operand: "driver", Nodes: 2},
		}}, Upgrades: map[string]int{"done": 1, "waiting": 3}},
		{Name: "h100", Nodes: 1, Operands: []summary.OperandCounts{{Operand: driver.Name, Counts: summary.Counts{1, 1, 0, 0, 0}}, {Operand: dcgm.Name, Counts: summary.Counts{1, 1, 0, 0, 0}}},
			Order: []summary.RuleCount{{Finding: "r2"}}},
		{Name: summary.NoGroup, Nodes: 1, Operands: []summary.OperandCounts{{Operand: driver.Name}, {Operand: toolkit.Name}}, Order: []summary.RuleCount{{Finding: "r1"}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Total:\n%+v\nwant\n%+v", got, want)
	}
}
