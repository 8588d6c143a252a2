package live

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// fleetTracker is a tracker whose stores hold n lab nodes, each running
// every operand and done with its driver upgrade, judged once; no API
// server is involved (the stores are filled by hand, nothing runs).
func fleetTracker(tb testing.TB, n int) (*Tracker, []string) {
	tb.Helper()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})
	t, err := New(client, Options{Options: pipeline.Options{Namespace: "gpu-operator", Upgrades: true}})
	if err != nil {
		tb.Fatal(err)
	}
	nodes := coreinformers.NewNodeInformer(client, 0, cache.Indexers{})
	t.resources = append(t.resources, resource{name: Nodes, informer: nodes})
	t.scope = pipeline.Scope{Options: t.opts.Options, Roster: operand.Lab, Rules: operand.RulesFor(operand.Lab, operand.AllRules)}
	var names []string
	for i := range n {
		name := fmt.Sprintf("gpu-%04d", i)
		names = append(names, name)
		labels := map[string]string{operand.UpgradeStateLabel: operand.UpgradeDone}
		for _, o := range operand.Lab {
			labels[o.LabelKey()] = "true"
			pod := snapshot.Pod{Name: o.DaemonSet + "-" + name, Node: name, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning, Health: snapshot.PodHealth{Ready: true}}
			addStored(tb, t.podIndex(), pod.Name, pod)
		}
		setNode(tb, t, snapshot.Node{Name: name, Labels: labels, Ready: true})
	}
	judged(tb, t, names, true, true)
	return t, names
}

// judged judges the named nodes again, as a batch of the tracker does.
func judged(tb testing.TB, t *Tracker, names []string, initial, force bool) {
	tb.Helper()
	if err := t.judge(names, initial, force); err != nil {
		tb.Fatal(err)
	}
}

func addStored[T any](tb testing.TB, st cache.Store, name string, of T) {
	tb.Helper()
	if err := st.Add(&stored[T]{key{Name: name, Namespace: "gpu-operator"}, of}); err != nil {
		tb.Fatal(err)
	}
}

// setNode puts a node in the store as an informer does: a new object.
func setNode(tb testing.TB, t *Tracker, n snapshot.Node) {
	tb.Helper()
	if err := t.nodeStore().Update(&stored[snapshot.Node]{key{Name: n.Name}, n}); err != nil {
		tb.Fatal(err)
	}
}

// withLabel is the stored node with one label set.
func withLabel(tb testing.TB, t *Tracker, name, key, value string) snapshot.Node {
	tb.Helper()
	obj, _, _ := t.nodeStore().GetByKey(name)
	n := obj.(*stored[snapshot.Node]).Of
	labels := map[string]string{key: value}
	for k, v := range n.Labels {
		if k != key {
			labels[k] = v
		}
	}
	n.Labels = labels
	return n
}

// A batch makes the rollout's pass over every node only when one of its
// inputs changed: a deploy label changes the node's verdict but not the
// rollout, which stands; an upgrade state label makes it again.
func TestRolloutPassOnlyWhenItsInputsChange(t *testing.T) {
	tr, names := fleetTracker(t, 4)
	first := tr.rolled
	if first == nil || first.Counts["done"] != 4 {
		t.Fatalf("first rollout %+v, want 4 nodes done", first)
	}
	setNode(t, tr, withLabel(t, tr, names[1], operand.Lab.DCGMExporter().LabelKey(), "false"))
	judged(t, tr, names[1:2], false, false)
	if tr.rolled != first {
		t.Error("a deploy label made the rollout's pass again")
	}
	if v := tr.verdicts[names[1]]; v.Upgrade == nil || v.Upgrade.Verdict != "done" {
		t.Errorf("the node judged again lost its part in the rollout: %+v", v.Upgrade)
	}
	setNode(t, tr, withLabel(t, tr, names[2], operand.UpgradeStateLabel, operand.UpgradeRequired))
	judged(t, tr, names[2:3], false, false)
	if tr.rolled == first {
		t.Fatal("an upgrade state label left the rollout as it was")
	}
	if v := tr.verdicts[names[2]]; v.Upgrade == nil || v.Upgrade.State != operand.UpgradeRequired {
		t.Errorf("the node's new state is not in its part: %+v", v.Upgrade)
	}
	again := tr.rolled
	// A pod the rollout does not read, replaced by its informer, leaves
	// it; the node's driver pod replaced makes it again.
	for _, c := range []struct {
		o     operand.Operand
		again bool
	}{{operand.Lab.DCGMExporter(), false}, {operand.Lab.Driver(), true}} {
		pod := snapshot.Pod{Name: c.o.DaemonSet + "-" + names[3], Node: names[3], DaemonSet: c.o.DaemonSet, Phase: corev1.PodRunning, Health: snapshot.PodHealth{Ready: true}}
		if err := tr.podIndex().Update(&stored[snapshot.Pod]{key{Name: pod.Name, Namespace: "gpu-operator"}, pod}); err != nil {
			t.Fatal(err)
		}
		judged(t, tr, names[3:4], false, false)
		if made := tr.rolled != again; made != c.again {
			t.Errorf("a %s pod replaced: the rollout made again %v, want %v", c.o.Name, made, c.again)
		}
		again = tr.rolled
	}
	judged(t, tr, names[1:2], false, true)
	if tr.rolled == again {
		t.Error("a forced batch (a new scope) left the rollout as it was")
	}
}

// BenchmarkBatch is one node's deploy label changed, at 5,000 nodes: the
// batch as serve judges it, and as it did before the rollout was kept (its
// pass over every node forced), in the same run.
func BenchmarkBatch(b *testing.B) {
	tr, names := fleetTracker(b, 5000)
	key := operand.Lab.DCGMExporter().LabelKey()
	for _, force := range []bool{false, true} {
		name := "incremental"
		if force {
			name = "every-node-baseline"
		}
		b.Run(name, func(b *testing.B) {
			for i := range b.N {
				setNode(b, tr, withLabel(b, tr, names[42], key, fmt.Sprint(i%2 == 0)))
				judged(b, tr, names[42:43], false, force)
			}
		})
	}
}

// A batch of more nodes than a chunk judges every one of them, each as a
// batch of that node alone would.
func TestBatchJudgedInChunks(t *testing.T) {
	n := 2*judgeChunk + 1
	tr, names := fleetTracker(t, n)
	if len(tr.verdicts) != n {
		t.Fatalf("%d verdicts of %d nodes", len(tr.verdicts), n)
	}
	for _, name := range []string{names[0], names[judgeChunk], names[n-1]} {
		got, err := tr.verdictsOf([]string{name}, tr.rolledAt)
		if err != nil {
			t.Fatal(err)
		}
		alone := got[name]
		alone.Upgrade = tr.verdicts[name].Upgrade // the rollout's part, set by the batch
		if !reflect.DeepEqual(alone, tr.verdicts[name]) {
			t.Errorf("%s: judged in the batch %+v, alone %+v", name, tr.verdicts[name], alone)
		}
	}
}

// A node's part in the rollout is its own: the pass's Nodes are not kept
// (a part pointing into them kept every node's part of that pass alive for
// as long as the node went unjudged); a part that reads the same as before
// is the one kept.
func TestRolloutPartsAreTheNodesOwn(t *testing.T) {
	tr, names := fleetTracker(t, 4)
	kept := tr.verdicts[names[0]].Upgrade
	setNode(t, tr, withLabel(t, tr, names[2], operand.UpgradeStateLabel, operand.UpgradeRequired))
	judged(t, tr, names[2:3], false, false)
	counted := 0
	for _, n := range tr.rolled.Counts {
		counted += n
	}
	if ro := tr.rolled; ro.Nodes != nil || counted != len(names) {
		t.Errorf("the pass kept: its Nodes %d (want none), its counts %v (want the %d nodes')", len(ro.Nodes), ro.Counts, len(names))
	}
	if v := tr.verdicts[names[2]].Upgrade; v == nil || v.State != operand.UpgradeRequired {
		t.Errorf("%s's part: %+v", names[2], v)
	}
	if tr.verdicts[names[0]].Upgrade != kept {
		t.Error("a part that reads the same was made again")
	}
}

// A verdict judged again lets the one it replaces go, and its health too,
// whichever nodes were judged beside it in a batch.
func TestReplacedVerdictIsFreed(t *testing.T) {
	tr, names := fleetTracker(t, 4)
	tr.opts.Health, tr.scope.Health = true, true
	judged(t, tr, slices.Clone(names), false, true) // the four in one batch, with health
	old, oldHealth := weakVerdict(t, tr, names[0])
	setNode(t, tr, withLabel(t, tr, names[0], operand.Lab.DCGMExporter().LabelKey(), "false"))
	judged(t, tr, names[:1], false, false)
	runtime.GC()
	if old.Value() != nil {
		t.Error("the replaced verdict is kept alive")
	}
	if oldHealth.Value() != nil {
		t.Error("the replaced verdict's health is kept alive")
	}
	runtime.KeepAlive(tr) // its verdicts, which must not keep the old ones
}

// weakVerdict is weak pointers to a node's verdict and its health.
func weakVerdict(tb testing.TB, tr *Tracker, name string) (weak.Pointer[verdict.Verdict], weak.Pointer[health.Node]) {
	tb.Helper()
	v := tr.verdicts[name]
	if v.Health == nil {
		tb.Fatalf("no health judged for %s", name)
	}
	return weak.Make(v), weak.Make(v.Health)
}
