package summary_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/verdict"
)

var (
	driver  = operand.Lab.Driver()
	toolkit = operand.Lab.ContainerToolkit()
	plugin  = operand.Lab.DevicePlugin()
	dcgm    = operand.Lab.DCGMExporter()
	rules   = operand.RulesFor(operand.Lab, operand.AllRules)
)

const product = operand.GPUProductLabel

// fleet is six nodes in three groups, one of each kind of state:
//
//	a100-1  asks driver, toolkit, plugin; all run           (good)
//	a100-2  asks driver, plugin; plugin runs, driver not     (missing driver, plugin without toolkit)
//	a100-10 driver paused, dcgm false, toolkit runs unasked  (toolkit without driver)
//	h100-1  asks driver; tainted away                        (missing driver)
//	h100-2  operands=false, asks plugin, which still runs    (disabled, plugin without toolkit)
//	bare    no product label, asks nothing
func fleet() *snapshot.Snapshot {
	n := func(name, prod string, labels ...string) snapshot.Node {
		l := map[string]string{}
		if prod != "" {
			l[product] = prod
		}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return snapshottest.Node(name, l)
	}
	run := snapshottest.Running
	tainted := snapshottest.Node("h100-1", map[string]string{product: "H100", driver.LabelKey(): "true"},
		snapshottest.Taints(corev1.Taint{Key: "broken", Effect: corev1.TaintEffectNoSchedule}))
	s := &snapshot.Snapshot{
		Namespace: "gpu-operator",
		Nodes: []snapshot.Node{
			n("bare", ""),
			tainted,
			n("a100-10", "A100", driver.LabelKey(), "paused-for-driver-upgrade", dcgm.LabelKey(), "false"),
			n("a100-2", "A100", driver.LabelKey(), "true", plugin.LabelKey(), "true"),
			n("a100-1", "A100", driver.LabelKey(), "true", toolkit.LabelKey(), "true", plugin.LabelKey(), "true"),
			n("h100-2", "H100", operand.OperandsLabel, "false", plugin.LabelKey(), "true"),
		},
		Pods: []snapshot.Pod{
			run("a100-1", driver), run("a100-1", toolkit), run("a100-1", plugin),
			run("a100-2", plugin), run("a100-10", toolkit), run("h100-2", plugin),
		},
	}
	for _, o := range operand.Lab {
		s.DaemonSets = append(s.DaemonSets, snapshottest.DaemonSet(o))
	}
	return s
}

func build(t *testing.T) summary.Fleet {
	t.Helper()
	f, err := judged(fleet(), operand.Lab, rules, product, explain.Clock{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// counts are one operand's counts as asked, running, missing, paused, disabled.
func counts(g summary.Group, op string) [5]int {
	for _, oc := range g.Operands {
		if oc.Operand == op {
			var c [5]int
			for i, s := range summary.States {
				c[i] = oc.Counts.Of(s)
			}
			return c
		}
	}
	return [5]int{-1}
}

func TestGroups(t *testing.T) {
	f := build(t)
	var names []string
	for _, g := range f.Groups {
		names = append(names, g.Name)
	}
	if want := []string{"A100", "H100", summary.NoGroup}; !slices.Equal(names, want) {
		t.Fatalf("groups %q, want %q", names, want)
	}
	a100, h100, none := f.Groups[0], f.Groups[1], f.Groups[2]
	for _, tc := range []struct {
		g      summary.Group
		op     string
		counts [5]int // asked, running, missing, paused, disabled
	}{
		{a100, "driver", [5]int{2, 1, 1, 1, 0}},
		{a100, "container-toolkit", [5]int{1, 2, 0, 0, 0}},
		{a100, "device-plugin", [5]int{2, 2, 0, 0, 0}},
		{a100, "dcgm-exporter", [5]int{0, 0, 0, 0, 1}},
		{h100, "driver", [5]int{1, 0, 1, 0, 1}},
		{h100, "device-plugin", [5]int{1, 1, 0, 0, 1}},
		{h100, "gpu-feature-discovery", [5]int{0, 0, 0, 0, 1}},
		{none, "driver", [5]int{0, 0, 0, 0, 0}},
	} {
		if got := counts(tc.g, tc.op); got != tc.counts {
			t.Errorf("%s %s: %v, want %v", tc.g.Name, tc.op, got, tc.counts)
		}
	}
	if a100.Nodes != 3 || a100.Findings != 2 || h100.Nodes != 2 || h100.Findings != 2 || none.Nodes != 1 || none.Findings != 0 {
		t.Errorf("node counts: %+v %+v %+v", a100, h100, none)
	}
	order := map[string]int{}
	for _, rc := range a100.Order {
		order[rc.Finding] = rc.Nodes
	}
	if order["device-plugin-without-toolkit"] != 1 || order["toolkit-without-driver"] != 1 || order["gpu-feature-discovery-without-toolkit"] != 0 || len(a100.Order) != len(rules) {
		t.Errorf("A100 order: %+v", a100.Order)
	}
}

func TestNodes(t *testing.T) {
	f := build(t)
	var names []string
	for _, n := range f.Nodes {
		names = append(names, n.Name)
	}
	if want := []string{"a100-1", "a100-2", "a100-10", "h100-1", "h100-2", "bare"}; !slices.Equal(names, want) {
		t.Fatalf("nodes %q, want %q (group by group, natural order)", names, want)
	}
	a2 := f.Nodes[1]
	if len(a2.Findings) != 2 ||
		a2.Findings[0].Kind != summary.MissingFinding || a2.Findings[0].Subject != "driver" || a2.Findings[0].Reasons[0].Code != explain.NoPodYet ||
		a2.Findings[1].Kind != summary.OrderFinding || a2.Findings[1].Subject != "device-plugin-without-toolkit" || a2.Findings[1].Reasons[0].Code != explain.BrokenOrder {
		t.Errorf("a100-2 findings: %+v", a2.Findings)
	}
	if h1 := f.Nodes[3]; len(h1.Findings) != 1 || h1.Findings[0].Reasons[0].Code != explain.UntoleratedTaint {
		t.Errorf("h100-1 findings: %+v", h1.Findings)
	}
	if f.Findings() != 5 {
		t.Errorf("findings %d, want 5", f.Findings())
	}
	for _, tc := range []struct {
		node, op int
		shown    summary.State
		ok       bool
	}{
		{0, 0, summary.Running, true},
		{1, 0, summary.Missing, true},
		{2, 0, summary.Paused, true},
		{2, 4, summary.Disabled, true},
		{2, 1, summary.Running, true},  // runs without being asked
		{4, 2, summary.Disabled, true}, // operands=false wins over running
		{3, 0, summary.Missing, true},  // missing wins over disabled
		{5, 0, 0, false},
	} {
		n := f.Nodes[tc.node]
		if s, ok := n.Cells[tc.op].Shown(); s != tc.shown || ok != tc.ok {
			t.Errorf("%s %s shows %v %v, want %v %v", n.Name, operand.Lab[tc.op].Name, s, ok, tc.shown, tc.ok)
		}
	}
}

// --group-by any label; a label nobody has puts every node in NoGroup.
func TestGroupByOtherLabel(t *testing.T) {
	f, err := judged(fleet(), operand.Lab, rules, "example.com/pool", explain.Clock{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) != 1 || f.Groups[0].Name != summary.NoGroup || f.Groups[0].Nodes != 6 {
		t.Errorf("groups %+v", f.Groups)
	}
}

func TestCountsJSON(t *testing.T) {
	f := build(t)
	b, err := json.Marshal(f.Groups[0].Operands[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"operand":"driver","counts":{"asked":2,"running":1,"missing":1,"paused":1,"disabled":0}}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	var back summary.OperandCounts
	if err := json.Unmarshal(b, &back); err != nil || back != f.Groups[0].Operands[0] {
		t.Errorf("decoded %+v, %v; want %+v", back, err, f.Groups[0].Operands[0])
	}
	if err := json.Unmarshal([]byte(`{"operand":"driver","counts":{"lost":1}}`), &back); err == nil {
		t.Error("an unknown state decodes")
	}
}

// An operand the ClusterPolicy switches off is disabled on every node and
// never missing; a helper's pause older than the clock allows is a stuck
// finding with the pause's message as reason, and suffixed pause values
// count as paused.
func TestSwitchedOffAndStuck(t *testing.T) {
	s := fleet()
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range s.Nodes {
		if s.Nodes[i].Name == "a100-10" {
			s.Nodes[i].Labels[plugin.LabelKey()] = "false_paused-for-driver-upgrade"
			s.Nodes[i].LabelChanges = map[string]snapshot.LabelChange{
				driver.LabelKey(): {Manager: "k8s-driver-manager", Time: since},
			}
		}
	}
	roster := slices.Clone(operand.Lab)
	roster[0].Off = "spec.driver.enabled is false"
	f, err := judged(s, roster, operand.RulesFor(roster, operand.AllRules), product, explain.Clock{Now: since.Add(time.Hour), StuckAfter: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a100, h100 := f.Groups[0], f.Groups[1]
	if got := counts(a100, "driver"); got != [5]int{0, 1, 0, 1, 3} {
		t.Errorf("A100 driver: %v, want none missing, all three disabled", got)
	}
	if got := counts(a100, "device-plugin"); got[summary.Paused] != 1 {
		t.Errorf("A100 device-plugin: %v, want one paused", got)
	}
	if got := counts(h100, "driver"); got[summary.Missing] != 0 {
		t.Errorf("H100 driver: %v, want none missing", got)
	}
	var found []summary.Finding
	for _, n := range f.Nodes {
		if n.Name == "a100-10" {
			found = n.Findings
		}
	}
	if len(found) != 1 || found[0].Kind != summary.StuckFinding || found[0].Subject != "driver" || len(found[0].Reasons) != 1 || found[0].Reasons[0].Code != "paused-for-driver-upgrade" {
		t.Errorf("a100-10 findings %+v, want driver stuck with the pause's reason (toolkit-without-driver excused: the driver is off)", found)
	}
}

// judged is the fleet view as the pipeline makes it: every judge, reasons
// included, then the grouping.
func judged(s *snapshot.Snapshot, roster []operand.Operand, rules []operand.Rule, groupBy string, at explain.Clock) (summary.Fleet, error) {
	p := pipeline.Scope{Options: pipeline.Options{Explain: true, GroupBy: groupBy, StuckAfter: at.StuckAfter}, Roster: roster, Rules: rules}
	r, err := p.Judge(s, at.Now)
	if err != nil {
		return summary.Fleet{}, err
	}
	return *r.Fleet, nil
}

// A group counts its GPU nodes ready and unusable, the causes with the most
// nodes first; a node without a GPU is neither.
func TestHealthCounts(t *testing.T) {
	s := &snapshot.Snapshot{}
	var verdicts []verdict.Verdict
	for i, c := range []*health.Cause{nil, {Code: health.CrashLoop, Operand: "driver"}, {Code: health.Missing, Operand: "dcgm-exporter"}, {Code: health.CrashLoop, Operand: "driver"}, nil} {
		name := fmt.Sprintf("n-%d", i)
		s.Nodes = append(s.Nodes, snapshot.Node{Name: name, Labels: map[string]string{product: "H100"}})
		verdicts = append(verdicts, verdict.Verdict{Node: name, Health: &health.Node{Node: name, Judged: i < 4, Usable: c == nil, Cause: c}})
	}
	// Out of service, counted by who took them out: a GPU node, usable or
	// not; a node without a GPU is not counted.
	for _, i := range []int{0, 1, 4} {
		verdicts[i].Health.OutOfService = &ledger.Entry{Actor: ledger.Person, Cordoned: true}
	}
	f := summary.Build(s, verdicts, operand.Lab, nil, product)
	want := &summary.HealthCounts{Ready: 1, Unusable: 3, Causes: []summary.CauseCount{{Code: "crash-loop", Operand: "driver", Nodes: 2}, {Code: "missing", Operand: "dcgm-exporter", Nodes: 1}},
		OutOfService: map[string]int{ledger.Person: 2}}
	if got := f.Groups[0].Health; !reflect.DeepEqual(got, want) {
		t.Errorf("health counts %+v, want %+v", got, want)
	}
}

// A group sums what its GPU nodes were asked to offer and offer, over the
// nodes whose ask can be told: here a time-slicing node not applied (32
// asked, 8 advertised), a plain one and a DRA node with a device withheld;
// a node with no count and no device is left out.
func TestHealthGPUs(t *testing.T) {
	s := &snapshot.Snapshot{Offers: snapshottest.Offers("plugin-configs", "mig-configs"), DevicePools: map[string][]snapshot.DevicePool{
		"dra": {{Name: "dra", Generation: 1, SliceCount: 1, Slices: 1, Devices: 8, Tainted: []snapshot.TaintedDevice{{Device: "gpu-0", Key: "gpu.nvidia.com/xid", Effect: "NoSchedule"}}}},
	}}
	gpus := map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 8, Allocatable: 8}}
	nodes := []snapshot.Node{
		{Name: "ts", Labels: map[string]string{operand.GPUCountLabel: "8", operand.DevicePluginConfigLabel: "ts"}, Devices: gpus},
		{Name: "plain", Labels: map[string]string{operand.GPUCountLabel: "8"}, Devices: gpus},
		{Name: "dra"},
		{Name: "untold"},
	}
	var verdicts []verdict.Verdict
	for _, n := range nodes {
		s.Nodes = append(s.Nodes, n)
		verdicts = append(verdicts, verdict.Verdict{Node: n.Name, Health: &health.Node{Node: n.Name, Judged: true, Usable: true}})
	}
	f := summary.Build(s, verdicts, operand.Lab, nil, product)
	want := &summary.GPUCounts{GPUs: health.GPUs{Asked: 48, Advertised: 23}, Nodes: 3}
	if got := f.Groups[0].Health.GPUs; !reflect.DeepEqual(got, want) {
		t.Errorf("GPUs %+v, want %+v", got, want)
	}
}
