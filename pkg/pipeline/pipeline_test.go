package pipeline_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// randomCluster makes a cluster of every odd case the judges know: deploy
// labels true, false, True, empty, pre-installed or absent; taints, cordons,
// NotReady nodes, operands=false; pods Running, Pending (on the node or only
// made for it), Failed, Unknown, deleting, hand-made or of a precompiled
// driver DaemonSet; DaemonSets missing, tolerant or selecting more.
func randomCluster(r *rand.Rand) *snapshot.Snapshot {
	return randomClusterOf(r, 2+r.IntN(8), r.IntN(40))
}

// randomClusterOf is a random cluster of these many nodes and pods.
func randomClusterOf(r *rand.Rand, nodes, pods int) *snapshot.Snapshot {
	values := []string{"true", "true", "true", "false", "True", "", "pre-installed", "paused-for-mig-change", "true_paused-for-driver-upgrade"}
	written := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(-time.Duration(1+r.IntN(120)) * time.Minute)
	s := &snapshot.Snapshot{Namespace: "gpu-operator"}
	for i := range nodes {
		n := snapshot.Node{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{}, Ready: r.IntN(6) > 0, Unschedulable: r.IntN(6) == 0}
		for _, o := range operand.Lab {
			if r.IntN(5) > 0 {
				n.Labels[o.LabelKey()] = values[r.IntN(len(values))]
				if r.IntN(2) == 0 { // who paused it, and when: the pause may be stuck
					if n.LabelChanges == nil {
						n.LabelChanges = map[string]snapshot.LabelChange{}
					}
					n.LabelChanges[o.LabelKey()] = snapshot.LabelChange{Manager: "nvidia-mig-manager", Time: written}
				}
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
	for i := range pods {
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

// nodeSnapshot is what the live tracker judges: the node, the pods on it or
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
// event touches right: a node's verdict from its own snapshot is what the
// whole cluster's snapshot gives it, with every rule, the reasons and
// pauses that may be stuck. The last few clusters are fleets big enough to
// be judged on several goroutines, as one node never is.
func TestNodeByNodeAgreesWithTheFleet(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(303) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := randomCluster(r)
		if seed >= 300 {
			s = randomClusterOf(r, 600, 3000)
		}
		for _, choice := range []discover.Choice{pipeline.LabRoster, pipeline.DiscoverRoster} {
			p := pipeline.Decide(s, pipeline.Options{Namespace: s.Namespace, Roster: choice, AllRules: true, Explain: true, Health: true, StuckAfter: time.Hour})
			whole, err := p.Judge(s, now)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range whole.Nodes {
				i := slices.IndexFunc(s.Nodes, func(n snapshot.Node) bool { return n.Name == want.Node })
				one, err := p.Judge(nodeSnapshot(s, s.Nodes[i]), now)
				if err != nil {
					t.Fatal(err)
				}
				if len(one.Nodes) != 1 || !reflect.DeepEqual(one.Nodes[0], want) {
					t.Fatalf("seed %d, node %s:\n got %+v\nwant %+v", seed, want.Node, one.Nodes, want)
				}
			}
		}
	}
}

// TestWhyIsExplainOfTheFleet: the reasons each node carries are what
// explain says of the whole snapshot about it, and the result's notes and
// disabled operands are explain's.
func TestWhyIsExplainOfTheFleet(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(100) {
		s := randomCluster(rand.New(rand.NewPCG(seed, 2)))
		s.Notes = []string{"a note of the reader"}
		p := pipeline.Decide(s, pipeline.Options{Roster: pipeline.DiscoverRoster, Explain: true, StuckAfter: time.Hour})
		r, err := p.Judge(s, now)
		if err != nil {
			t.Fatal(err)
		}
		audits := judge.Audit(s, p.Roster)
		judge.Stuck(audits, s, p.Roster, now, time.Hour)
		want := explain.Explain(s, p.Roster, audits, explain.Clock{Now: now, StuckAfter: time.Hour})
		want.Notes = append(want.Notes, discover.For(s, pipeline.DiscoverRoster).Notes...)
		if !reflect.DeepEqual(r.Notes, want.Notes) || !reflect.DeepEqual(r.Disabled, want.Disabled) {
			t.Fatalf("seed %d: notes %q, disabled %+v; want %q, %+v", seed, r.Notes, r.Disabled, want.Notes, want.Disabled)
		}
		if len(r.Nodes) != len(audits) {
			t.Fatalf("seed %d: %d verdicts of %d nodes", seed, len(r.Nodes), len(audits))
		}
		for i, v := range r.Nodes {
			of := func(node string) bool { return node == v.Node }
			mine := explain.Report{
				Missing:    slices.DeleteFunc(slices.Clone(want.Missing), func(m explain.Missing) bool { return !of(m.Node) }),
				Warnings:   slices.DeleteFunc(slices.Clone(want.Warnings), func(w explain.Warning) bool { return !of(w.Node) }),
				Unexpected: slices.DeleteFunc(slices.Clone(want.Unexpected), func(u explain.Unexpected) bool { return !of(u.Node) }),
			}
			if v.Explain == nil && len(mine.Missing)+len(mine.Warnings)+len(mine.Unexpected) == 0 {
				mine = explain.Report{} // nothing to explain: no report
			}
			if !reflect.DeepEqual(v.Why(), mine) || !reflect.DeepEqual(v.Audit, audits[i]) {
				t.Fatalf("seed %d, node %s:\n got %+v, %+v\nwant %+v, %+v", seed, v.Node, v.Why(), v.Audit, mine, audits[i])
			}
		}
	}
}

// No report is shared, so none can be written through to another node's:
// a node with nothing to explain has none (serve holds a verdict of every
// node), a node with a reason has its own.
func TestNoExplanationShared(t *testing.T) {
	s := &snapshot.Snapshot{Namespace: "gpu-operator", DaemonSets: []snapshot.DaemonSet{{Name: operand.Lab.DevicePlugin().DaemonSet,
		NodeSelector: map[string]string{operand.Lab.DevicePlugin().LabelKey(): "true"}}}}
	for _, name := range []string{"plain-1", "plain-2", "asks", "plain-3"} {
		n := snapshot.Node{Name: name, Ready: true}
		if name == "asks" {
			n.Labels = map[string]string{operand.Lab.DevicePlugin().LabelKey(): "true"}
		}
		s.Nodes = append(s.Nodes, n)
	}
	r, err := pipeline.Decide(s, pipeline.Options{Roster: pipeline.LabRoster, Explain: true}).Judge(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]*explain.Report{}
	for _, v := range r.Nodes {
		at[v.Node] = v.Explain
	}
	for _, name := range []string{"plain-1", "plain-2", "plain-3"} {
		if at[name] != nil {
			t.Errorf("%s: a report (%+v), with nothing to explain", name, at[name])
		}
	}
	if at["asks"] == nil || len(at["asks"].Missing) != 1 {
		t.Errorf("asks: %+v, want its own report of one missing operand", at["asks"])
	}
}

func TestVerdictOfAbsentNode(t *testing.T) {
	r, err := pipeline.Scope{Roster: operand.Lab, Rules: []operand.Rule{operand.DeviceRule}}.Judge(&snapshot.Snapshot{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var nf *judge.NodeNotFoundError
	if _, err := r.Verdict("gone"); !errors.As(err, &nf) || nf.Node != "gone" {
		t.Fatalf("verdict of a node not in the snapshot: %v", err)
	}
}
