package upgrade

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const driverDS = "nvidia-driver-daemonset"

// node is one node of a test fleet: its state label (none when "-"), how
// long it has been in it, and the rest that can change a verdict.
type node struct {
	name, state string
	age         time.Duration
	cordonedBy  string // spec.unschedulable's writer; "" not cordoned
	notReady    bool
	skip        bool
	noDriver    bool
	oldPod      bool // the driver pod runs an older template
	driver      snapshot.PodHealth
	validator   *snapshot.PodHealth
	annotations map[string]string
}

func fleet(policy *snapshot.UpgradePolicy, nodes ...node) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Policy: &snapshot.ClusterPolicy{Name: "cluster-policy", UpgradePolicy: policy},
		Revisions: map[string]string{driverDS: "new"}, UpgradeEvents: map[string]snapshot.Event{}}
	for _, n := range nodes {
		sn := snapshot.Node{Name: n.name, Labels: map[string]string{}, Ready: !n.notReady, Annotations: n.annotations}
		if n.state != "-" {
			sn.Labels[operand.UpgradeStateLabel] = n.state
			sn.LabelChanges = map[string]snapshot.LabelChange{operand.UpgradeStateLabel: {Manager: operand.UpgradeManager, Time: now.Add(-n.age)}}
		}
		if n.skip {
			sn.Labels[operand.UpgradeSkipLabel] = "true"
		}
		if n.cordonedBy != "" {
			sn.Unschedulable = true
			sn.Cordon = &snapshot.LabelChange{Manager: n.cordonedBy, Time: now.Add(-time.Hour)}
		}
		s.Nodes = append(s.Nodes, sn)
		if !n.noDriver {
			rev := "new"
			if n.oldPod {
				rev = "old"
			}
			s.Pods = append(s.Pods, snapshot.Pod{Name: "driver-" + n.name, Node: n.name, DaemonSet: driverDS, Phase: corev1.PodRunning, Revision: rev, Health: n.driver})
		}
		if n.validator != nil {
			s.Pods = append(s.Pods, snapshot.Pod{Name: "validator-" + n.name, Node: n.name, DaemonSet: operand.UpgradeValidator, Phase: corev1.PodRunning, Health: *n.validator})
		}
	}
	return s
}

func policy(maxParallel int, maxUnavailable string) *snapshot.UpgradePolicy {
	mu := intstr.Parse(maxUnavailable)
	return &snapshot.UpgradePolicy{AutoUpgrade: true, MaxParallelUpgrades: maxParallel, MaxUnavailable: &mu}
}

func verdicts(r Rollout) map[string]Node {
	out := map[string]Node{}
	for _, n := range r.Nodes {
		out[n.Node] = n
	}
	return out
}

func TestAssess(t *testing.T) {
	ready := snapshot.PodHealth{Ready: true}
	crashing := snapshot.PodHealth{Container: "nvidia-driver-ctr", State: "CrashLoopBackOff", Restarts: 11}
	for _, tc := range []struct {
		name    string
		policy  *snapshot.UpgradePolicy
		nodes   []node
		events  map[string]snapshot.Event
		node    string // the node whose verdict is checked
		verdict string
		cause   string // a part of the cause; "" none at all
	}{
		{name: "done", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeDone, driver: ready}}, node: "a", verdict: Done},
		{name: "no state, pod in sync", policy: policy(1, "25%"), nodes: []node{{name: "a", state: "-"}}, node: "a", verdict: Done},
		{name: "no state, older pod", policy: policy(1, "25%"), nodes: []node{{name: "a", state: "-", oldPod: true}}, node: "a", verdict: Outdated, cause: "next pass"},
		{name: "older pod, autoUpgrade off", policy: nil, nodes: []node{{name: "a", state: "-", oldPod: true}}, node: "a", verdict: Outdated, cause: "autoUpgrade is off"},
		{name: "moving", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeDrainRequired, age: time.Minute}}, node: "a", verdict: InProgress},
		{name: "stuck", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradeValidationRequired, age: 2 * time.Hour, validator: &snapshot.PodHealth{}}},
			node:  "a", verdict: Stuck, cause: "in validation-required for 2h0m0s: validator pod validator-a not Ready"},
		{name: "stuck pod restart", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradePodRestartRequired, age: 2 * time.Hour, driver: crashing}},
			node:  "a", verdict: Stuck, cause: "driver pod driver-a not Ready (nvidia-driver-ctr CrashLoopBackOff, 11 restarts)"},
		{name: "required, a slot", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeRequired}}, node: "a", verdict: InProgress},
		{name: "required with a slot, long", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeRequired, age: 2 * time.Hour}}, node: "a", verdict: Stuck, cause: "did not start"},
		{name: "skipped", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeRequired, skip: true, age: 2 * time.Hour}}, node: "a", verdict: Skipped, cause: operand.UpgradeSkipLabel},
		{name: "skip only in upgrade-required", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeDrainRequired, skip: true}}, node: "a", verdict: InProgress},
		{name: "waiting on maxParallel", policy: policy(1, "100%"),
			nodes: []node{{name: "a", state: operand.UpgradeDrainRequired}, {name: "b", state: operand.UpgradeRequired}},
			node:  "b", verdict: Waiting, cause: "maxParallelUpgrades 1 used by a"},
		{name: "a failed node holds its slot", policy: policy(1, "100%"),
			nodes: []node{{name: "a", state: operand.UpgradeFailed}, {name: "b", state: operand.UpgradeRequired}},
			node:  "b", verdict: Waiting, cause: "maxParallelUpgrades 1 used by a"},
		{name: "maxParallel 0 is unlimited", policy: policy(0, "100%"),
			nodes: []node{{name: "a", state: operand.UpgradeDrainRequired}, {name: "b", state: operand.UpgradeDrainRequired}, {name: "c", state: operand.UpgradeRequired}},
			node:  "c", verdict: InProgress},
		{name: "maxUnavailable spent by a node cordoned for another reason", policy: policy(0, "1"),
			nodes: []node{{name: "a", state: operand.UpgradeDone, cordonedBy: "kubectl-cordon"}, {name: "b", state: operand.UpgradeRequired}, {name: "c", state: operand.UpgradeDone}},
			node:  "b", verdict: Waiting, cause: "maxUnavailable 1 used by a (cordoned by kubectl-cordon)"},
		{name: "maxUnavailable spent by a NotReady node", policy: policy(0, "1"),
			nodes: []node{{name: "a", state: "-", notReady: true}, {name: "b", state: operand.UpgradeRequired}},
			node:  "b", verdict: Waiting, cause: "a (NotReady)"},
		{name: "a cordoned node goes ahead without a slot", policy: policy(0, "1"),
			nodes: []node{{name: "a", state: operand.UpgradeDone, notReady: true}, {name: "b", state: operand.UpgradeRequired, cordonedBy: "kubectl-cordon"}},
			node:  "b", verdict: InProgress, cause: "already cordoned"},
		{name: "autoUpgrade off", policy: &snapshot.UpgradePolicy{MaxParallelUpgrades: 1}, nodes: []node{{name: "a", state: operand.UpgradeRequired}}, node: "a", verdict: Waiting, cause: "autoUpgrade is off"},
		{name: "failed: restarts", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeFailed, driver: crashing}},
			node: "a", verdict: Failed, cause: "container nvidia-driver-ctr restarted 11 times and is not Ready"},
		{name: "failed: 10 restarts are not enough", policy: policy(1, "25%"),
			nodes:  []node{{name: "a", state: operand.UpgradeFailed, driver: snapshot.PodHealth{Container: "c", Restarts: 10}}},
			events: map[string]snapshot.Event{"a": {Type: "Warning", Message: "Failed to drain the node, timed out", Time: now}},
			node:   "a", verdict: Failed, cause: "Failed to drain the node, timed out"},
		{name: "failed: validation annotation past 600 s", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradeFailed, driver: ready,
				annotations: map[string]string{operand.UpgradeValidationStart: strconv.FormatInt(now.Add(-11*time.Minute).Unix(), 10)}}},
			node: "a", verdict: Failed, cause: "validation not done 10m0s"},
		{name: "failed: validation begun within 600 s", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradeFailed, driver: ready,
				annotations: map[string]string{operand.UpgradeValidationStart: strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10)}}},
			node: "a", verdict: Failed, cause: "no cause left to read"},
		{name: "failed: validator not Ready", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradeFailed, driver: ready, validator: &snapshot.PodHealth{}}},
			node:  "a", verdict: Failed, cause: "validator pod validator-a not Ready"},
		{name: "failed: no cause", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeFailed, driver: ready}},
			node: "a", verdict: Failed, cause: "no cause left to read"},
		{name: "failed, the driver recovered: the controller's routine Event is no cause", policy: policy(1, "25%"),
			nodes:  []node{{name: "a", state: operand.UpgradeFailed, driver: ready}},
			events: map[string]snapshot.Event{"a": {Type: "Normal", Message: "Successfully updated node state label to upgrade-failed", Time: now}},
			node:   "a", verdict: Failed, cause: "no cause left to read"},
		{name: "left cordoned by the controller", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradeDone, cordonedBy: operand.UpgradeManager}}, node: "a", verdict: LeftCordoned, cause: "cordoned by gpu-operator"},
		{name: "cordoned by a person", policy: policy(1, "25%"),
			nodes: []node{{name: "a", state: operand.UpgradeDone, cordonedBy: "kubectl-cordon"}}, node: "a", verdict: Done, cause: "cordoned by kubectl-cordon"},
		{name: "state label without a driver pod", policy: policy(1, "25%"), nodes: []node{{name: "a", state: operand.UpgradeDone, noDriver: true}}, node: "a", verdict: Done},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fleet(tc.policy, tc.nodes...)
			if tc.events != nil {
				s.UpgradeEvents = tc.events
			}
			r := Assess(s, operand.Lab, now, time.Hour)
			got, ok := verdicts(r)[tc.node]
			if !ok || got.Verdict != tc.verdict || tc.cause == "" && got.Cause != "" || !strings.Contains(got.Cause, tc.cause) {
				t.Fatalf("%s: %+v, want verdict %s, cause with %q", tc.node, got, tc.verdict, tc.cause)
			}
			if r.Counts[tc.verdict] == 0 {
				t.Errorf("counts %v miss %s", r.Counts, tc.verdict)
			}
		})
	}
}

func TestNotInRollout(t *testing.T) {
	s := fleet(policy(1, "25%"), node{name: "cpu", state: "-", noDriver: true}, node{name: "gpu", state: "-"})
	s.Revisions = nil // the DaemonSet's template unknown: no claim on gpu either
	if r := Assess(s, operand.Lab, now, time.Hour); len(r.Nodes) != 0 {
		t.Errorf("nodes %+v, want none", r.Nodes)
	}
}

func TestSince(t *testing.T) {
	r := Assess(fleet(policy(1, "25%"), node{name: "a", state: operand.UpgradeDrainRequired, age: time.Minute}), operand.Lab, now, 0)
	if s := r.Nodes[0].Since; s == nil || !s.Equal(now.Add(-time.Minute)) {
		t.Errorf("since %v, want %v", s, now.Add(-time.Minute))
	}
	// stuckAfter 0: never stuck.
	r = Assess(fleet(policy(1, "25%"), node{name: "a", state: operand.UpgradeDrainRequired, age: 100 * time.Hour}), operand.Lab, now, 0)
	if r.Nodes[0].Verdict != InProgress {
		t.Errorf("verdict %s, want %s", r.Nodes[0].Verdict, InProgress)
	}
}

// maxUnavailable as a percentage is of the managed nodes, rounded up: 25% of
// 5 is 2, so two of five upgrade-required nodes start and three wait.
func TestMaxUnavailablePercentRoundsUp(t *testing.T) {
	var nodes []node
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		nodes = append(nodes, node{name: n, state: operand.UpgradeRequired})
	}
	r := Assess(fleet(policy(0, "25%"), nodes...), operand.Lab, now, time.Hour)
	if r.Budget.MaxUnavailable != 2 || r.Budget.Nodes != 5 || r.Budget.Available != 2 || strings.Join(r.Budget.Starting, ",") != "a,b" {
		t.Fatalf("budget %+v, want 2 of 5 available, a and b starting", r.Budget)
	}
	if r.Counts[InProgress] != 2 || r.Counts[Waiting] != 3 {
		t.Errorf("counts %v, want 2 in-progress, 3 waiting", r.Counts)
	}
	if c := verdicts(r)["c"].Cause; !strings.Contains(c, "maxUnavailable 2 used by a, b") {
		t.Errorf("cause %q names not the starting nodes", c)
	}
}

func TestBudgetLists(t *testing.T) {
	r := Assess(fleet(policy(2, "50%"),
		node{name: "a", state: operand.UpgradeCordonRequired},
		node{name: "b", state: operand.UpgradeFailed},
		node{name: "c", state: "-", cordonedBy: "kubectl-cordon"},
		node{name: "d", state: operand.UpgradeDone}), operand.Lab, now, time.Hour)
	b := r.Budget
	if strings.Join(b.InProgress, ",") != "a,b" || strings.Join(b.Unavailable, ",") != "a,c" || b.MaxParallel != 2 || b.MaxUnavailable != 2 {
		t.Errorf("budget %+v, want a,b in progress, a,c unavailable", b)
	}
}

// With NVIDIADriver objects each pool has its own policy and budget.
func TestPools(t *testing.T) {
	s := fleet(nil, node{name: "a", state: operand.UpgradeDrainRequired}, node{name: "b", state: operand.UpgradeRequired},
		node{name: "c", state: operand.UpgradeRequired}, node{name: "d", state: operand.UpgradeRequired})
	s.Policy.NVIDIADriverCRD = true
	s.NVIDIADrivers = []snapshot.NVIDIADriver{{Name: "pool-1", UpgradePolicy: policy(1, "100%")}, {Name: "pool-2", UpgradePolicy: policy(1, "100%")}}
	for name, owner := range map[string]string{"a": "pool-1", "b": "pool-1", "c": "pool-2"} {
		for i := range s.Nodes {
			if s.Nodes[i].Name == name {
				s.Nodes[i].Labels[operand.NVIDIADriverOwner] = owner
			}
		}
	}
	r := Assess(s, operand.Lab, now, time.Hour)
	v := verdicts(r)
	if v["b"].Verdict != Waiting || v["c"].Verdict != InProgress || v["c"].Pool != "pool-2" {
		t.Errorf("b %+v, c %+v: want b waiting on a, c in progress in pool-2", v["b"], v["c"])
	}
	if _, ok := v["d"]; ok || r.Policy != nil || len(r.Pools) != 2 {
		t.Errorf("d without an owner judged (%v), or policy %v, pools %+v", ok, r.Policy, r.Pools)
	}
}

// TestSlotsFollowNamesNotSnapshotOrder: the live store holds its nodes in
// no order; the slot goes to the first upgrade-required node by name
// whatever order the snapshot lists them in.
func TestSlotsFollowNamesNotSnapshotOrder(t *testing.T) {
	for _, order := range [][]string{{"gpu-2", "gpu-10", "gpu-1"}, {"gpu-10", "gpu-1", "gpu-2"}, {"gpu-1", "gpu-2", "gpu-10"}} {
		var nodes []node
		for _, name := range order {
			nodes = append(nodes, node{name: name, state: operand.UpgradeRequired})
		}
		got := verdicts(Assess(fleet(policy(1, "1"), nodes...), operand.Lab, now, time.Hour))
		if got["gpu-1"].Verdict != InProgress || got["gpu-2"].Verdict != Waiting || got["gpu-10"].Verdict != Waiting {
			t.Errorf("nodes listed %v: %+v, want gpu-1 in progress with the slot and the others waiting", order, got)
		}
	}
}
