package plan_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
)

const (
	driver  = operand.Driver
	toolkit = operand.ContainerToolkit
	plugin  = operand.DevicePlugin
	gfd     = operand.GPUFeatureDiscovery
	dcgm    = operand.DCGMExporter
)

func key(name string) string { return operand.LabelPrefix + name }

// on builds deploy labels: each name "true"; "name=value" for another value.
func on(names ...string) map[string]string {
	l := map[string]string{}
	for _, n := range names {
		k, v, found := strings.Cut(n, "=")
		if !found {
			v = "true"
		}
		l[key(k)] = v
	}
	return l
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

// labDaemonSets are the lab's five DaemonSets as the kustomize bases select:
// each on its own deploy label "true", no tolerations.
func labDaemonSets() []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	for _, o := range operand.Lab {
		out = append(out, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: o.DaemonSet},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeSelector: map[string]string{o.LabelKey(): "true"},
			}}},
		})
	}
	return out
}

var fullStack = on(driver, toolkit, plugin, gfd, dcgm)

func TestMake(t *testing.T) {
	noSchedule := corev1.Taint{Key: "gpu-broken", Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name    string
		req     plan.Request
		nodes   []*corev1.Node
		steps   []plan.Step
		desired []plan.Desired
		breaks  []plan.Break
		refusal string
	}{
		{
			name:    "opt-out of a leaf: one step, one DaemonSet down by one",
			req:     plan.Request{Operand: dcgm, Nodes: []string{"a"}},
			nodes:   []*corev1.Node{node("a", fullStack), node("b", fullStack)},
			steps:   []plan.Step{{Operands: []string{dcgm}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(dcgm + "=false")}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-dcgm-exporter", Operand: dcgm, Before: 2, After: 1}},
		},
		{
			name:    "opt-out of the toolkit under its users is refused",
			req:     plan.Request{Operand: toolkit, Nodes: []string{"a"}},
			nodes:   []*corev1.Node{node("a", fullStack)},
			steps:   []plan.Step{{Operands: []string{toolkit}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(toolkit + "=false")}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 1, After: 0}},
			breaks: []plan.Break{
				{Node: "a", Rule: "device-plugin-without-toolkit", Operand: plugin, Needs: toolkit},
				{Node: "a", Rule: "gpu-feature-discovery-without-toolkit", Operand: gfd, Needs: toolkit},
				{Node: "a", Rule: "dcgm-exporter-without-toolkit", Operand: dcgm, Needs: toolkit},
			},
			refusal: "a: opting out container-toolkit would leave device-plugin, gpu-feature-discovery, dcgm-exporter without it; opt them out first, or use --with-dependents",
		},
		{
			name:  "with dependents: the users that are on go first, in one step",
			req:   plan.Request{Operand: toolkit, Nodes: []string{"a"}, Mode: plan.WithDependents},
			nodes: []*corev1.Node{node("a", on(driver, toolkit, plugin, dcgm, gfd+"=false")), node("b", fullStack)},
			steps: []plan.Step{
				{Operands: []string{plugin, dcgm}, Value: "false",
					Nodes: []plan.NodeLabels{{Node: "a", Labels: on(plugin+"=false", dcgm+"=false")}}},
				{Operands: []string{toolkit}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(toolkit + "=false")}}},
			},
			desired: []plan.Desired{
				{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 2, After: 1},
				{DaemonSet: "nvidia-dcgm-exporter", Operand: dcgm, Before: 2, After: 1},
				{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 2, After: 1},
			},
		},
		{
			name:  "with dependents of the driver: toolkit users, then the toolkit, then the driver",
			req:   plan.Request{Operand: driver, Nodes: []string{"a"}, Mode: plan.WithDependents},
			nodes: []*corev1.Node{node("a", on(driver, toolkit, plugin))},
			steps: []plan.Step{
				{Operands: []string{plugin}, Value: "false",
					Nodes: []plan.NodeLabels{{Node: "a", Labels: on(plugin + "=false")}}},
				{Operands: []string{toolkit}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(toolkit + "=false")}}},
				{Operands: []string{driver}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(driver + "=false")}}},
			},
			desired: []plan.Desired{
				{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 1, After: 0},
				{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 1, After: 0},
				{DaemonSet: "nvidia-driver-daemonset", Operand: driver, Before: 1, After: 0},
			},
		},
		{
			name:    "a break that was already there is not the change's doing",
			req:     plan.Request{Operand: toolkit, Nodes: []string{"a"}},
			nodes:   []*corev1.Node{node("a", on(plugin))},
			steps:   []plan.Step{{Operands: []string{toolkit}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(toolkit + "=false")}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit}},
		},
		{
			name:    "opt-in of the device plugin without the toolkit is refused",
			req:     plan.Request{Operand: plugin, On: true, Nodes: []string{"c"}},
			nodes:   []*corev1.Node{node("c", nil)},
			steps:   []plan.Step{{Operands: []string{plugin}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(plugin)}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 0, After: 1}},
			breaks:  []plan.Break{{Node: "c", Rule: "device-plugin-without-toolkit", Operand: plugin, Needs: toolkit}},
			refusal: "c: opting in device-plugin would leave it without container-toolkit; opt it in first, or use --with-dependencies",
		},
		{
			name:  "with dependencies on a node without a driver: driver, toolkit, device plugin",
			req:   plan.Request{Operand: plugin, On: true, Nodes: []string{"c"}, Mode: plan.WithDependencies},
			nodes: []*corev1.Node{node("c", nil)},
			steps: []plan.Step{
				{Operands: []string{driver}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(driver)}}},
				{Operands: []string{toolkit}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(toolkit)}}},
				{Operands: []string{plugin}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(plugin)}}},
			},
			desired: []plan.Desired{
				{DaemonSet: "nvidia-driver-daemonset", Operand: driver, Before: 0, After: 1},
				{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 0, After: 1},
				{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 0, After: 1},
			},
		},
		{
			name:  "with dependencies on a host driver (false, pre-installed): the driver stays as it is",
			req:   plan.Request{Operand: plugin, On: true, Nodes: []string{"c", "d"}, Mode: plan.WithDependencies},
			nodes: []*corev1.Node{node("c", on(driver+"=false")), node("d", on(driver+"=pre-installed"))},
			steps: []plan.Step{
				{Operands: []string{toolkit}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(toolkit)}, {Node: "d", Labels: on(toolkit)}}},
				{Operands: []string{plugin}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(plugin)}, {Node: "d", Labels: on(plugin)}}},
			},
			desired: []plan.Desired{
				{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 0, After: 2},
				{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 0, After: 2},
			},
		},
		{
			name:    "with dependencies where the toolkit is on: only the device plugin",
			req:     plan.Request{Operand: plugin, On: true, Nodes: []string{"c"}, Mode: plan.WithDependencies},
			nodes:   []*corev1.Node{node("c", on(toolkit))},
			steps:   []plan.Step{{Operands: []string{plugin}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(plugin)}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 0, After: 1}},
		},
		{
			name:    "a toolkit paused by the operator is no break",
			req:     plan.Request{Operand: plugin, On: true, Nodes: []string{"c"}},
			nodes:   []*corev1.Node{node("c", on(toolkit+"=paused-for-driver-upgrade"))},
			steps:   []plan.Step{{Operands: []string{plugin}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(plugin)}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-device-plugin-daemonset", Operand: plugin, Before: 0, After: 1}},
		},
		{
			name:    "opting out the driver marks a host driver: the toolkit keeps what it needs",
			req:     plan.Request{Operand: driver, Nodes: []string{"a"}},
			nodes:   []*corev1.Node{node("a", fullStack)},
			steps:   []plan.Step{{Operands: []string{driver}, Value: "false", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(driver + "=false")}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-driver-daemonset", Operand: driver, Before: 1, After: 0}},
		},
		{
			name:    "opt-in of the toolkit without any driver is refused",
			req:     plan.Request{Operand: toolkit, On: true, Nodes: []string{"c"}},
			nodes:   []*corev1.Node{node("c", nil)},
			steps:   []plan.Step{{Operands: []string{toolkit}, Value: "true", Nodes: []plan.NodeLabels{{Node: "c", Labels: on(toolkit)}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 0, After: 1}},
			breaks:  []plan.Break{{Node: "c", Rule: "toolkit-without-driver", Operand: toolkit, Needs: driver}},
			refusal: "c: opting in container-toolkit would leave it without driver; opt it in first, or use --with-dependencies",
		},
		{
			name: "many nodes: each refused node is named once, the first in the message",
			req:  plan.Request{Operand: toolkit, Nodes: []string{"a", "b", "c"}},
			nodes: []*corev1.Node{
				node("a", on(driver, toolkit)), node("b", on(driver, toolkit, dcgm)), node("c", on(driver, toolkit, plugin)),
			},
			steps: []plan.Step{{Operands: []string{toolkit}, Value: "false", Nodes: []plan.NodeLabels{
				{Node: "a", Labels: on(toolkit + "=false")}, {Node: "b", Labels: on(toolkit + "=false")}, {Node: "c", Labels: on(toolkit + "=false")},
			}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-container-toolkit-daemonset", Operand: toolkit, Before: 3, After: 0}},
			breaks: []plan.Break{
				{Node: "b", Rule: "dcgm-exporter-without-toolkit", Operand: dcgm, Needs: toolkit},
				{Node: "c", Rule: "device-plugin-without-toolkit", Operand: plugin, Needs: toolkit},
			},
			refusal: "b: opting out container-toolkit would leave dcgm-exporter without it; opt it out first, or use --with-dependents (and 1 more node)",
		},
		{
			name: "desired counts leave out nodes whose taint the DaemonSet does not tolerate",
			req:  plan.Request{Operand: dcgm, On: true, Nodes: []string{"a", "t"}},
			nodes: []*corev1.Node{
				node("a", on(driver, toolkit)), node("t", on(driver, toolkit), noSchedule), node("x", on(dcgm, toolkit)),
			},
			steps:   []plan.Step{{Operands: []string{dcgm}, Value: "true", Nodes: []plan.NodeLabels{{Node: "a", Labels: on(dcgm)}, {Node: "t", Labels: on(dcgm)}}}},
			desired: []plan.Desired{{DaemonSet: "nvidia-dcgm-exporter", Operand: dcgm, Before: 1, After: 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.Make(tc.req, tc.nodes, labDaemonSets(), operand.Real, operand.AllRules)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Steps, tc.steps) {
				t.Errorf("steps:\n got %+v\nwant %+v", p.Steps, tc.steps)
			}
			if !reflect.DeepEqual(p.DaemonSets, tc.desired) {
				t.Errorf("desired:\n got %+v\nwant %+v", p.DaemonSets, tc.desired)
			}
			if want := tc.breaks; !reflect.DeepEqual(p.Breaks, append([]plan.Break{}, want...)) {
				t.Errorf("breaks:\n got %+v\nwant %+v", p.Breaks, want)
			}
			err = p.Refusal()
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && (err == nil || err.Error() != tc.refusal):
				t.Errorf("refusal %v\nwant      %s", err, tc.refusal)
			}
		})
	}
}

func TestMakeRefusesUnknownAndRepeatedNodes(t *testing.T) {
	nodes := []*corev1.Node{node("a", nil)}
	if _, err := plan.Make(plan.Request{Operand: dcgm, Nodes: []string{"x"}}, nodes, nil, operand.Real, operand.AllRules); err == nil || err.Error() != "node x not found" {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := plan.Make(plan.Request{Operand: dcgm, Nodes: []string{"a", "a"}}, nodes, nil, operand.Real, operand.AllRules); err == nil {
		t.Error("a node named twice must be refused")
	}
}

// The order of bringing operands up and down comes from the rules alone.
func TestLayers(t *testing.T) {
	users := []string{plugin, gfd, operand.DCGM, dcgm, operand.MIGManager}
	for _, tc := range []struct {
		name string
		got  [][]string
		want [][]string
	}{
		// the validator and the DRA stack need the driver too; the
		// validator and the toolkit's users go before the toolkit
		{"dependents of the driver", plan.Dependents(operand.AllRules, driver), [][]string{
			append([]string{operand.OperatorValidator, "dra-validator", "dcgm-dra", "dcgm-exporter-dra"}, users...),
			{toolkit, operand.DRADriver}}},
		{"dependents of the toolkit", plan.Dependents(operand.AllRules, toolkit), [][]string{append(slices.Clone(users), operand.OperatorValidator)}},
		{"dependents of a leaf", plan.Dependents(operand.AllRules, dcgm), nil},
		{"dependencies of the device plugin", plan.Dependencies(operand.AllRules, plugin), [][]string{{driver}, {toolkit}}},
		{"dependencies of the driver", plan.Dependencies(operand.AllRules, driver), nil},
		{"dependents of the lab's one rule", plan.Dependents([]operand.Rule{operand.DeviceRule}, toolkit), [][]string{{plugin}}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// A chain longer than one step: the furthest goes first even when the
	// rules list it first.
	chain := []operand.Rule{{Operand: "c", Needs: "b", Finding: "c-b"}, {Operand: "b", Needs: "a", Finding: "b-a"}, {Operand: "d", Needs: "a", Finding: "d-a"}}
	if got, want := plan.Dependents(chain, "a"), [][]string{{"c"}, {"b", "d"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("chain: %v, want %v", got, want)
	}
}

// Broken on labels: asking is "true" only; a host value or a pause keeps the need.
func TestBroken(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   []string
	}{
		{fullStack, nil},
		{on(plugin), []string{"device-plugin-without-toolkit"}},
		{on(plugin + "=True"), nil},
		{on(plugin, toolkit+"=True"), []string{"device-plugin-without-toolkit"}},
		{on(plugin, toolkit+"=paused-for-mig-change"), nil},
		{on(toolkit), []string{"toolkit-without-driver"}},
		{on(toolkit, driver+"=false"), nil},
		{on(toolkit, driver+"=pre-installed"), nil},
		{on(toolkit, driver+"=paused-for-driver-upgrade"), nil},
		// the driver manager's suffixed pause is one; a look-alike is not
		{on(plugin, toolkit+"=true_paused-for-driver-upgrade"), nil},
		{on(plugin, toolkit+"=paused-for-something-else"), []string{"device-plugin-without-toolkit"}},
		{on(plugin, gfd, operand.DCGM, dcgm, operand.MIGManager), []string{
			"device-plugin-without-toolkit", "gpu-feature-discovery-without-toolkit", "dcgm-without-toolkit",
			"dcgm-exporter-without-toolkit", "mig-manager-without-toolkit"}},
	} {
		var got []string
		for _, r := range plan.Broken(tc.labels, operand.AllRules) {
			got = append(got, r.Finding)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.labels, got, tc.want)
		}
	}
}
