package judge_test

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// A precompiled driver DaemonSet counts as the driver operand once the
// roster names it as a variant.
func TestVariantsCountAsTheOperand(t *testing.T) {
	const precompiled = "nvidia-driver-daemonset-5.15.0-105-generic-ubuntu22.04"
	pod := snapshot.Pod{Name: precompiled + "-x", Node: "n", DaemonSet: precompiled, Phase: "Running"}
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{node("n", asks(driver))}, Pods: []snapshot.Pod{pod}}

	if a := judge.Audit(s, operand.Lab); a[0].OK() {
		t.Fatalf("without the variant in the roster the driver must be missing, got %+v", a)
	}
	roster := slices.Clone(operand.Lab)
	roster[0].Variants = []string{precompiled}
	if a := judge.Audit(s, roster); !a[0].OK() {
		t.Errorf("audit with the variant: %+v, want OK", a)
	}
	if m := judge.NewIndex(s).Matrix(roster); !m.Rows[0].Present.Has("driver") {
		t.Errorf("matrix with the variant: %+v, want driver=yes", m.Rows[0])
	}
}

// The operator's start-up order, the validator's and the DRA stack's included.
func TestOrderAllRules(t *testing.T) {
	rules := operand.RulesFor(operand.Real, operand.AllRules)
	if len(rules) != len(operand.AllRules) {
		t.Fatalf("every rule must name operands of the real catalog: kept %d of %d", len(rules), len(operand.AllRules))
	}
	real := func(name string) operand.Operand {
		o, err := operand.Lookup(operand.Real, name)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	dcgmHost, mig := real(operand.DCGM), real(operand.MIGManager)
	validator, dra, draValidator := real(operand.OperatorValidator), real(operand.DRADriver), real("dra-validator")
	for _, tc := range []struct {
		name   string
		labels map[string]string
		pods   []operand.Operand
		want   []string
	}{
		{"full stack", nil, []operand.Operand{driver, toolkit, plugin, gfd, dcgm, dcgmHost, mig}, []string{}},
		{"nothing", nil, nil, []string{}},
		{"driver alone", nil, []operand.Operand{driver}, []string{}},
		{"toolkit without a driver", nil, []operand.Operand{toolkit}, []string{"toolkit-without-driver"}},
		{"toolkit, driver label true but no pod", map[string]string{driver.LabelKey(): "true"}, []operand.Operand{toolkit}, []string{"toolkit-without-driver"}},
		{"toolkit on a host driver (false)", map[string]string{driver.LabelKey(): "false"}, []operand.Operand{toolkit}, []string{}},
		{"toolkit on a host driver (pre-installed)", map[string]string{driver.LabelKey(): "pre-installed"}, []operand.Operand{toolkit}, []string{}},
		{"toolkit, driver label paused", map[string]string{driver.LabelKey(): "paused-for-driver-upgrade"}, []operand.Operand{toolkit}, []string{"toolkit-without-driver"}},
		{"every toolkit user alone", nil, []operand.Operand{plugin, gfd, dcgmHost, dcgm, mig}, []string{
			"device-plugin-without-toolkit", "gpu-feature-discovery-without-toolkit", "dcgm-without-toolkit",
			"dcgm-exporter-without-toolkit", "mig-manager-without-toolkit",
		}},
		{"gfd alone", nil, []operand.Operand{gfd}, []string{"gpu-feature-discovery-without-toolkit"}},
		{"validator on the full stack", nil, []operand.Operand{driver, toolkit, validator}, []string{}},
		{"validator alone", nil, []operand.Operand{validator}, []string{"operator-validator-without-driver", "operator-validator-without-toolkit"}},
		{"validator on a host driver", map[string]string{driver.LabelKey(): "pre-installed"}, []operand.Operand{toolkit, validator}, []string{}},
		{"DRA stack", nil, []operand.Operand{driver, dra, draValidator}, []string{}},
		{"DRA validator without the kubelet plugin", nil, []operand.Operand{driver, draValidator}, []string{"dra-validator-without-dra-driver"}},
		{"DRA kubelet plugin on a host driver", map[string]string{driver.LabelKey(): "false"}, []operand.Operand{dra}, []string{}},
		{"dcgm exporter alone", nil, []operand.Operand{dcgm}, []string{"dcgm-exporter-without-toolkit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{node("n", tc.labels)}}
			for _, o := range tc.pods {
				s.Pods = append(s.Pods, running("n", o))
			}
			v, err := judge.Order(s, "n", operand.Real, rules)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Findings, tc.want) {
				t.Errorf("findings %q, want %q", v.Findings, tc.want)
			}
		})
	}
}

// The lab's verdicts are the same with all rules on: the host driver of
// lab-node-1 satisfies the toolkit, and the device-plugin finding comes first.
func TestOrderSpecAllRules(t *testing.T) {
	s := specState(true)
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	want := map[string]string{"lab-node-0": "ok", "lab-node-1": "ok", "lab-node-2": "device-plugin-without-toolkit"}
	for n, w := range want {
		v, err := judge.Order(s, n, operand.Lab, rules)
		if err != nil {
			t.Fatal(err)
		}
		if v.String() != w {
			t.Errorf("%s: %q, want %q", n, v.String(), w)
		}
	}
}

// OrderAll judges every node as Order does one, in natural name order, and
// says which rules it judged.
func TestOrderAllIsOrderPerNode(t *testing.T) {
	s := specState(true)
	s.Nodes = append(s.Nodes, node("lab-node-10", nil))
	s.Pods = append(s.Pods, running("lab-node-10", toolkit))
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	all, err := judge.OrderAll(s, operand.Lab, rules)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range all {
		names = append(names, v.Node)
		one, err := judge.Order(s, v.Node, operand.Lab, rules)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v.Findings, one.Findings) || len(v.Rules) != len(rules) {
			t.Errorf("%s: OrderAll %q (%d rules), Order %q", v.Node, v.Findings, len(v.Rules), one.Findings)
		}
	}
	if want := []string{"lab-node-0", "lab-node-1", "lab-node-2", "lab-node-10"}; !slices.Equal(names, want) {
		t.Errorf("nodes %q, want %q", names, want)
	}
	if all[3].String() != "toolkit-without-driver" || all[2].String() != "device-plugin-without-toolkit" {
		t.Errorf("verdicts %v", all)
	}
}

// Asked lists what the node asks for, the missing ones among them.
func TestAuditAsked(t *testing.T) {
	a := judge.Audit(specState(false), operand.Lab)
	if want := []string{"driver", "container-toolkit", "device-plugin", "gpu-feature-discovery", "dcgm-exporter"}; !slices.Equal(a[0].Asked, want) {
		t.Errorf("lab-node-0 asks %q, want %q", a[0].Asked, want)
	}
	if want := []string{"container-toolkit", "device-plugin", "gpu-feature-discovery"}; !slices.Equal(a[1].Asked, want) {
		t.Errorf("lab-node-1 asks %q, want %q", a[1].Asked, want)
	}
	if len(a[2].Asked) != 0 {
		t.Errorf("lab-node-2 asks %q, want nothing", a[2].Asked)
	}
}

// An operand the ClusterPolicy switches off is not missing where its label
// is "true" (the operator writes it anyway), and the rules take it as the
// hosts': a disabled driver is a host driver, a disabled toolkit a host toolkit.
func TestSwitchedOffOperands(t *testing.T) {
	roster := slices.Clone(operand.Lab)
	roster[0].Off = "spec.driver.enabled is false"
	roster[1].Off = "spec.toolkit.enabled is false"
	labels := asks(driver, toolkit, plugin)
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{node("n", labels)}, Pods: []snapshot.Pod{running("n", plugin)}}
	if a := judge.Audit(s, roster); !a[0].OK() {
		t.Errorf("audit: %+v, want OK", a)
	}
	if a := judge.Audit(s, operand.Lab); !slices.Equal(a[0].Missing, []string{"driver", "container-toolkit"}) {
		t.Errorf("audit with both switched on: %+v, want driver and toolkit missing", a)
	}
	rules := operand.RulesFor(roster, operand.AllRules)
	if v, _ := judge.Order(s, "n", roster, rules); !v.OK() {
		t.Errorf("order with the toolkit off: %q, want ok", v.Findings)
	}
	if v, _ := judge.Order(s, "n", operand.Lab, rules); v.String() != "device-plugin-without-toolkit" {
		t.Errorf("order with the toolkit on: %q, want device-plugin-without-toolkit", v.Findings)
	}
	s.Pods = []snapshot.Pod{running("n", toolkit)}
	if v, _ := judge.Order(s, "n", roster, rules); !v.OK() {
		t.Errorf("toolkit with the driver off: %q, want ok", v.Findings)
	}
}
