package verdict_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// randomCluster makes a cluster of every odd case the judges know: deploy
// labels true, false, True, empty, pre-installed or absent; taints, cordons,
// NotReady nodes, operands=false; pods Running, Pending (on the node or only
// made for it), Failed, Unknown, deleting, hand-made or of a precompiled
// driver DaemonSet; DaemonSets missing, tolerant or selecting more.
func randomCluster(r *rand.Rand) *snapshot.Snapshot {
	values := []string{"true", "true", "true", "false", "True", "", "pre-installed"}
	s := &snapshot.Snapshot{Namespace: "gpu-operator"}
	for i := range 2 + r.IntN(8) {
		n := snapshot.Node{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{}, Ready: r.IntN(6) > 0, Unschedulable: r.IntN(6) == 0}
		for _, o := range operand.Lab {
			if r.IntN(5) > 0 {
				n.Labels[o.LabelKey()] = values[r.IntN(len(values))]
			}
		}
		if r.IntN(8) == 0 {
			n.Labels[operand.OperandsLabel] = "false"
		}
		if r.IntN(5) == 0 {
			n.Taints = []corev1.Taint{{Key: "gpu-broken", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
		}
		s.Nodes = append(s.Nodes, n)
	}
	dss := append(operand.Lab[:len(operand.Lab):len(operand.Lab)], operand.Operand{Name: operand.Driver, DaemonSet: "nvidia-driver-daemonset-6.8-ubuntu24.04"})
	for _, o := range dss {
		if r.IntN(6) == 0 {
			continue
		}
		d := snapshot.DaemonSet{Name: o.DaemonSet, NodeSelector: map[string]string{o.LabelKey(): "true"}}
		if r.IntN(3) == 0 {
			d.Tolerations = []corev1.Toleration{{Key: "gpu-broken", Operator: corev1.TolerationOpExists}}
		}
		s.DaemonSets = append(s.DaemonSets, d)
	}
	phases := []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodFailed, corev1.PodUnknown}
	for i := range r.IntN(40) {
		d := dss[r.IntN(len(dss))]
		n := s.Nodes[r.IntN(len(s.Nodes))].Name
		p := snapshot.Pod{Name: fmt.Sprintf("pod-%d", i), Node: n, Target: n, DaemonSet: d.DaemonSet, Phase: phases[r.IntN(len(phases))], Deleting: r.IntN(8) == 0}
		switch r.IntN(6) {
		case 0:
			p.Node = "" // not scheduled yet
			p.Phase = corev1.PodPending
			p.Reason = "0/9 nodes are available"
		case 1:
			p.DaemonSet, p.Target = "", "" // hand-made, same app label
		}
		s.Pods = append(s.Pods, p)
	}
	return s
}

// nodeSnapshot is what the live judge gives Of: the node, the pods on it or
// made for it, every DaemonSet.
func nodeSnapshot(s *snapshot.Snapshot, node snapshot.Node) *snapshot.Snapshot {
	out := &snapshot.Snapshot{Namespace: s.Namespace, Nodes: []snapshot.Node{node}, DaemonSets: s.DaemonSets}
	for _, p := range s.Pods {
		if p.Placement() == node.Name {
			out.Pods = append(out.Pods, p)
		}
	}
	return out
}

// TestNodeByNodeAgreesWithTheFleet is what makes judging only the nodes an
// event touches right: a node's verdict from its own snapshot is what
// audit, order-check --all-rules, matrix and explain say of it from the
// whole cluster's.
func TestNodeByNodeAgreesWithTheFleet(t *testing.T) {
	for seed := range uint64(300) {
		s := randomCluster(rand.New(rand.NewPCG(seed, 1)))
		for _, roster := range [][]operand.Operand{operand.Lab, discover.Roster(s.DaemonSets)} {
			rules := operand.RulesFor(roster, operand.AllRules)
			audits := judge.Audit(s, roster)
			matrix := judge.BuildMatrix(s, roster)
			why := explain.Explain(s, roster, audits, explain.Clock{})
			for i, n := range judge.SortedNodes(s) {
				got := verdict.Of(nodeSnapshot(s, n), n.Name, roster, rules, true)
				order, err := judge.Order(s, n.Name, roster, rules)
				if err != nil {
					t.Fatal(err)
				}
				want := &verdict.Verdict{Node: n.Name, Audit: audits[i], Order: order, Row: matrix.Rows[i], Explain: explain.Report{
					Disabled:   why.Disabled,
					Notes:      why.Notes,
					Missing:    keep(why.Missing, func(m explain.Missing) bool { return m.Node == n.Name }),
					Warnings:   keep(why.Warnings, func(w explain.Warning) bool { return w.Node == n.Name }),
					Unexpected: keep(why.Unexpected, func(u explain.Unexpected) bool { return u.Node == n.Name }),
				}}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, node %s:\n got %+v\nwant %+v", seed, n.Name, got, want)
				}
			}
		}
	}
}

func keep[T any](s []T, f func(T) bool) []T {
	out := []T{}
	for _, x := range s {
		if f(x) {
			out = append(out, x)
		}
	}
	return out
}

func TestOfAbsentNode(t *testing.T) {
	if v := verdict.Of(&snapshot.Snapshot{}, "gone", operand.Lab, []operand.Rule{operand.DeviceRule}, false); v != nil {
		t.Fatalf("verdict of a node not in the snapshot: %+v", v)
	}
}

func TestRuleOf(t *testing.T) {
	rules := operand.AllRules
	if r := verdict.RuleOf(rules, "toolkit-without-driver"); r.Operand != operand.ContainerToolkit || r.Needs != operand.Driver {
		t.Fatalf("RuleOf(toolkit-without-driver) = %+v", r)
	}
	if r := verdict.RuleOf(rules, "nope"); !slices.Equal([]string{r.Finding, r.Operand}, []string{"nope", ""}) {
		t.Fatalf("RuleOf(nope) = %+v", r)
	}
}
