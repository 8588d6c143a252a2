package live

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// Without reasons the store keeps a node's deploy labels alone, as the
// one-shot judges' narrow read does; with them, those the verdicts read
// (pipeline.Options.LabelsRead): the catalog's and the DaemonSets' selector
// keys, not the rest of a real node's hundred.
func TestTrimNodeKeepsWhatTheJudgesRead(t *testing.T) {
	deploy := map[string]string{operand.Lab.Driver().LabelKey(): "true", operand.OperandsLabel: "true"}
	read := map[string]string{operand.GPUPresent: "true", "feature.node.kubernetes.io/pci-10de.present": "true"}
	maps.Copy(read, deploy)
	all := map[string]string{"nvidia.com/cuda.driver.major": "580", "feature.node.kubernetes.io/kernel-version.full": "6.8.0-40-generic"}
	maps.Copy(all, read)
	dss := []snapshot.DaemonSet{{Name: "nvidia-driver-daemonset", NodeSelector: map[string]string{"feature.node.kubernetes.io/pci-10de.present": "true"}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", ResourceVersion: "7", Labels: all}}
	for _, tc := range []struct {
		opts pipeline.Options
		want map[string]string
	}{{pipeline.Options{}, deploy}, {pipeline.Options{Explain: true}, read}} {
		trim := trimNode(tc.opts.ReadOptions(), tc.opts.LabelsRead(dss))
		got, err := trim(node)
		if err != nil {
			t.Fatal(err)
		}
		s := got.(*stored[snapshot.Node])
		if !reflect.DeepEqual(s.Of.Labels, tc.want) || s.Name != "gpu-1" || s.ResourceVersion != "7" {
			t.Errorf("%+v: kept %s@%s with labels %v, want %v", tc.opts, s.Name, s.ResourceVersion, s.Of.Labels, tc.want)
		}
		if again, _ := trim(got); again != got {
			t.Errorf("%+v: a trimmed node is trimmed again (the transform must be idempotent)", tc.opts)
		}
	}
}

// With every label kept, two nodes' equal labels share one string: the
// store holds each key and value once however many nodes carry it.
func TestTrimNodeInternsLabels(t *testing.T) {
	labels := func() map[string]string {
		// Built at run time, so that no two nodes share the strings to begin with.
		return map[string]string{strings.Clone(operand.GPUPresent): strings.Clone("true")}
	}
	var kept []*stored[snapshot.Node]
	for _, name := range []string{"gpu-1", "gpu-2"} {
		got, err := trimNode(read.Options{}, pipeline.Options{Explain: true}.LabelsRead(nil))(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels()}})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, got.(*stored[snapshot.Node]))
	}
	for k, v := range kept[0].Of.Labels {
		for k2, v2 := range kept[1].Of.Labels {
			if unsafe.StringData(k) != unsafe.StringData(k2) || unsafe.StringData(v) != unsafe.StringData(v2) {
				t.Errorf("label %s=%s is stored twice", k, v)
			}
		}
	}
}

// Nodes that carry the same kept labels share one map of them, and a node
// whose labels change takes the map of its new set; past maxLabelSets sets
// each node still gets its own labels.
func TestTrimNodeSharesLabelMaps(t *testing.T) {
	trim := trimNode(read.Options{}, pipeline.Options{}.LabelsRead(nil))
	key := operand.Lab.Driver().LabelKey()
	labels := func(name, value string) map[string]string {
		got, err := trim(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{key: value, "unread": name}}})
		if err != nil {
			t.Fatal(err)
		}
		return got.(*stored[snapshot.Node]).Of.Labels
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	one, two, off := labels("gpu-1", "true"), labels("gpu-2", "true"), labels("gpu-3", "false")
	if !same(one, two) || same(one, off) {
		t.Errorf("gpu-1 and gpu-2 share their labels' map: %v, gpu-1 and gpu-3 do not: %v", same(one, two), !same(one, off))
	}
	if again := labels("gpu-1", "false"); !same(again, off) || !reflect.DeepEqual(again, map[string]string{key: "false"}) || one[key] != "true" {
		t.Errorf("gpu-1 relabelled keeps %v (shared with gpu-3: %v), and gpu-2 %v", again, same(again, off), one)
	}
	for i := range maxLabelSets + 1 {
		v := fmt.Sprint(i)
		if got := labels(fmt.Sprintf("gpu-%d", i), v); got[key] != v {
			t.Fatalf("set %d: kept %v", i, got)
		}
	}
}

// The nodes share their kept labels' maps (labelSets), so a write to one
// node's labels would change the others': judging every node with every
// judge on, and again once one is relabelled, writes to none.
func TestJudgingWritesNoSharedLabels(t *testing.T) {
	tr, names := fleetTracker(t, 6)
	tr.opts.Explain, tr.opts.Health, tr.opts.AllRules, tr.opts.StuckAfter = true, true, true, time.Minute
	tr.scope.Options = tr.opts.Options
	trim := trimNode(tr.opts.ReadOptions(), tr.opts.LabelsRead(nil))
	held := map[string]map[string]string{} // a copy of each node's labels as stored
	store := func(name string, labels map[string]string) {
		got, err := trim(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		if err != nil {
			t.Fatal(err)
		}
		setNode(t, tr, got.(*stored[snapshot.Node]).Of)
		held[name] = maps.Clone(got.(*stored[snapshot.Node]).Of.Labels)
	}
	for i, name := range names {
		labels := map[string]string{operand.UpgradeStateLabel: operand.UpgradeDone, operand.GPUPresent: "true"}
		for _, o := range operand.Lab {
			labels[o.LabelKey()] = "true"
		}
		if i%2 == 1 { // a break of the start-up order, with its reasons
			labels[operand.Lab.ContainerToolkit().LabelKey()] = "false"
		}
		store(name, labels)
	}
	judged(t, tr, slices.Clone(names), false, true)
	store(names[0], map[string]string{operand.Lab.DevicePlugin().LabelKey(): "true"})
	judged(t, tr, names[:1], false, false)
	for _, name := range names {
		obj, _, _ := tr.nodeStore().GetByKey(name)
		if got := obj.(*stored[snapshot.Node]).Of.Labels; !maps.Equal(got, held[name]) {
			t.Errorf("%s: labels %v after judging, stored as %v", name, got, held[name])
		}
	}
}

// With a trace, the store keeps who wrote a paused label and when, as the
// one-shot read does: how long the pause has lasted decides STUCK.
func TestTrimNodeTracesPauses(t *testing.T) {
	key := operand.Lab.DevicePlugin().LabelKey()
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	fields := &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:` + key + `":{}}}}`)}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{key: "paused-for-mig-change"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "nvidia-mig-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at, FieldsType: "FieldsV1", FieldsV1: fields}}}}
	got, err := trimNode(read.Options{DeployLabelsOnly: true, Trace: operand.Paused}, pipeline.Options{}.LabelsRead(nil))(node)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]snapshot.LabelChange{key: {Manager: "nvidia-mig-manager", Time: at.UTC()}}
	if c := got.(*stored[snapshot.Node]).Of.LabelChanges; !reflect.DeepEqual(c, want) {
		t.Fatalf("label changes %v, want %v", c, want)
	}
}
