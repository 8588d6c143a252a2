package ledger_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

var at = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func cordonedBy(manager string) *snapshot.LabelChange {
	return &snapshot.LabelChange{Manager: manager, Time: at}
}

// Each actor is told by its own mark first, by the cordon's field manager
// second; a node neither cordoned nor tainted against work has no entry.
func TestOf(t *testing.T) {
	rec := ledger.Record{Code: "device-plugin-without-toolkit", Operand: "device-plugin", Since: at.Add(-time.Hour)}
	for _, c := range []struct {
		name      string
		node      snapshot.Node
		actor, by string
		since     time.Time
		taints    int
		none      bool
		cause     string
	}{
		{name: "schedulable", node: snapshot.Node{}, none: true},
		{name: "informational taints only", none: true, node: snapshot.Node{Taints: []corev1.Taint{
			{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute},
			{Key: "example.com/soon", Effect: corev1.TaintEffectPreferNoSchedule}}}},
		{name: "a person", node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kubectl-cordon")}, actor: ledger.Person, by: "kubectl-cordon", since: at},
		{name: "kubectl cordon of kubectl 1.37", node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kubectl")}, actor: ledger.Person, by: "kubectl", since: at},
		{name: "kubectl edit", node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kubectl-edit")}, actor: ledger.Person, by: "kubectl-edit", since: at},
		{name: "upgrade controller by its state", actor: ledger.UpgradeController, by: operand.UpgradeStateLabel + "=" + operand.UpgradeDrainRequired, since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kubectl-cordon"), Labels: map[string]string{operand.UpgradeStateLabel: operand.UpgradeDrainRequired}}},
		{name: "upgrade controller left it cordoned", actor: ledger.UpgradeController, by: operand.UpgradeManager, since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy(operand.UpgradeManager), Labels: map[string]string{operand.UpgradeStateLabel: operand.UpgradeDone}}},
		{name: "driver manager", actor: ledger.DriverManager, by: operand.DriverManagerInitialState, since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("driver-manager"), Annotations: map[string]string{operand.DriverManagerInitialState: "false"}}},
		{name: "driver manager by manager", actor: ledger.DriverManager, by: "driver-manager", since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("driver-manager")}},
		{name: "NVSentinel", actor: ledger.NVSentinel, by: operand.NVSentinelHealthEvent, since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("fault-quarantine"), Annotations: map[string]string{operand.NVSentinelHealthEvent: `{"checkName":"GpuXidError"}`}}},
		{name: "NVSentinel by its label", actor: ledger.NVSentinel, by: "k8saas.nvidia.com/cordon-by=NVSentinel", since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("fault-quarantine"), Labels: map[string]string{"k8saas.nvidia.com/cordon-by": "NVSentinel"}}},
		{name: "NVSentinel taint only", actor: ledger.NVSentinel, by: operand.NVSentinelAppliedTaints, since: at, taints: 1,
			node: snapshot.Node{Taints: []corev1.Taint{{Key: "AggregatedNodeHealth", Effect: corev1.TaintEffectNoSchedule}}, Tainter: cordonedBy("fault-quarantine"),
				Annotations: map[string]string{operand.NVSentinelAppliedTaints: `[{"Key":"AggregatedNodeHealth"}]`}}},
		{name: "kured", actor: ledger.Kured, by: "kured.dev/kured-reboot-in-progress", since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kured"), Annotations: map[string]string{"kured.dev/kured-reboot-in-progress": "2026-12-04T10:00:00Z"}}},
		{name: "kured by manager", actor: ledger.Kured, by: "kured", since: at, node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kured")}},
		{name: "gpuops", actor: ledger.Gpuops, by: operand.QuarantineAnnotation, since: rec.Since, cause: "device-plugin-without-toolkit device-plugin",
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy(operand.QuarantineManager), Annotations: map[string]string{operand.QuarantineAnnotation: rec.Format()}}},
		{name: "gpuops's record, uncordoned by a person and tainted by one", actor: ledger.Person, by: "kubectl-taint", since: at, taints: 1,
			node: snapshot.Node{Taints: []corev1.Taint{{Key: "example.com/broken", Effect: corev1.TaintEffectNoExecute}}, Tainter: cordonedBy("kubectl-taint"),
				Annotations: map[string]string{operand.QuarantineAnnotation: rec.Format()}}},
		{name: "gpuops's record on a node a person cordoned since", actor: ledger.Person, by: "kubectl-cordon", since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("kubectl-cordon"), Annotations: map[string]string{operand.QuarantineAnnotation: rec.Format()}}},
		{name: "gpuops's record unreadable", actor: ledger.Gpuops, by: operand.QuarantineManager, since: at,
			node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy(operand.QuarantineManager), Annotations: map[string]string{operand.QuarantineAnnotation: "{"}}},
		{name: "no managedFields", actor: ledger.Unknown, node: snapshot.Node{Unschedulable: true}},
		{name: "another controller", actor: ledger.Unknown, by: "cluster-autoscaler", since: at, node: snapshot.Node{Unschedulable: true, Cordon: cordonedBy("cluster-autoscaler")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := ledger.Of(&c.node)
			if c.none {
				if e != nil {
					t.Fatalf("entry %+v, want none", e)
				}
				return
			}
			if e == nil {
				t.Fatal("no entry")
			}
			var since time.Time
			if e.Since != nil {
				since = *e.Since
			}
			if e.Actor != c.actor || e.By != c.by || !since.Equal(c.since) || len(e.Taints) != c.taints || e.Cordoned != c.node.Unschedulable || e.Cause != c.cause {
				t.Errorf("entry %+v (since %v), want actor %s by %q since %v, %d taints, cause %q", e, since, c.actor, c.by, c.since, c.taints, c.cause)
			}
		})
	}
}

// The record round-trips through its annotation, to the second.
func TestRecord(t *testing.T) {
	r := ledger.Record{Code: "toolkit-not-ready", Operand: "container-toolkit", Since: at.Add(1500 * time.Millisecond)}
	n := snapshot.Node{Annotations: map[string]string{operand.QuarantineAnnotation: r.Format()}}
	got, ok := ledger.RecordOf(&n)
	if !ok || got.Code != r.Code || got.Operand != r.Operand || !got.Since.Equal(at.Add(time.Second)) {
		t.Errorf("record read back %+v, %v; want %+v to the second", got, ok, r)
	}
	if _, ok := ledger.RecordOf(&snapshot.Node{Annotations: map[string]string{operand.QuarantineAnnotation: `{"since":"2026-12-04T10:00:00Z"}`}}); ok {
		t.Error("a record without a cause read as gpuops's")
	}
}

// The budget: every node the upgrade controller counts against
// maxUnavailable, by who holds it; a NotReady node no one cordoned is
// unknown.
func TestBudgetOf(t *testing.T) {
	entries := map[string]*ledger.Entry{"a": {Actor: ledger.Person}, "b": {Actor: ledger.Gpuops}, "c": {Actor: ledger.Person}, "x": {Actor: ledger.Kured}}
	b := ledger.BudgetOf(3, []string{"a", "b", "c", "d"}, entries)
	want := map[string]int{ledger.Person: 2, ledger.Gpuops: 1, ledger.Unknown: 1}
	for _, a := range ledger.Actors {
		if b.ByActor[a] != want[a] {
			t.Errorf("%s holds %d of the budget, want %d", a, b.ByActor[a], want[a])
		}
	}
	if b.Used != 4 || b.MaxUnavailable != 3 {
		t.Errorf("budget %+v, want 4 used of 3", b)
	}
	if got, want := b.Describe(), "maxUnavailable 3, 4 used: 1 by gpuops, 2 by person, 1 by unknown"; got != want {
		t.Errorf("described %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	since := at
	e := ledger.Entry{Actor: ledger.Person, By: "kubectl-cordon", Cordoned: true, Taints: []string{"example.com/broken:NoSchedule"}, Since: &since}
	if got, want := e.String(), "cordoned and tainted example.com/broken:NoSchedule by person (kubectl-cordon) since 2026-12-04T10:00:00Z"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
