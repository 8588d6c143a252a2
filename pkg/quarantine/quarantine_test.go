package quarantine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/quarantine"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

var (
	now      = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	settings = quarantine.Settings{After: 2 * time.Minute, ReleaseAfter: time.Minute, Max: 10, Rate: 10}
)

// broken is a node unusable for this long; fine one usable for this long.
func broken(name string, d time.Duration) quarantine.Node {
	return quarantine.Node{Name: name, Code: "order", Operand: "device-plugin", Since: now.Add(-d)}
}

func fine(name string, d time.Duration) quarantine.Node {
	return quarantine.Node{Name: name, Usable: true, Since: now.Add(-d)}
}

// held gives the node to an actor, out of service since d ago.
func held(n quarantine.Node, actor string, d time.Duration) quarantine.Node {
	since := now.Add(-d)
	n.Held = &ledger.Entry{Actor: actor, Cordoned: true, Since: &since}
	n.Recorded = actor == ledger.Gpuops
	return n
}

func decide(nodes []quarantine.Node, edit ...func(*quarantine.Input)) quarantine.Decision {
	in := quarantine.Input{Now: now, Nodes: nodes, GPUNodes: len(nodes), Settings: settings}
	for _, e := range edit {
		e(&in)
	}
	return quarantine.Decide(in)
}

func quarantined(d quarantine.Decision) []string {
	var out []string
	for _, a := range d.Quarantine {
		out = append(out, a.Node)
	}
	return out
}

func released(d quarantine.Decision) []string {
	var out []string
	for _, r := range d.Release {
		out = append(out, r.Node)
	}
	return out
}

func heldFor(d quarantine.Decision, node string) string {
	for _, h := range d.Held {
		if h.Node == node {
			return h.Reason
		}
	}
	return ""
}

// nothing reports whether a decision changes nothing in the cluster.
func nothing(d quarantine.Decision) bool {
	return len(d.Quarantine) == 0 && len(d.Release) == 0 && len(d.Forget) == 0 && d.Trip == ""
}

// A node unusable for --quarantine-after is quarantined, not before, with
// its cause; it is released once usable for --release-after, not before.
func TestAfterAndReleaseAfter(t *testing.T) {
	d := decide([]quarantine.Node{broken("early", 2*time.Minute-time.Second), broken("due", 2*time.Minute)})
	if got := quarantined(d); !slices.Equal(got, []string{"due"}) || d.Quarantine[0].Code != "order" || d.Quarantine[0].Operand != "device-plugin" {
		t.Errorf("quarantined %v (%+v), want due with its cause", got, d.Quarantine)
	}
	if heldFor(d, "early") != quarantine.NotYet {
		t.Errorf("early held for %q, want %q", heldFor(d, "early"), quarantine.NotYet)
	}
	d = decide([]quarantine.Node{
		held(fine("early", time.Minute-time.Second), ledger.Gpuops, time.Hour),
		held(fine("due", time.Minute), ledger.Gpuops, time.Hour),
		held(broken("still", time.Hour), ledger.Gpuops, time.Hour),
	})
	if got := released(d); !slices.Equal(got, []string{"due"}) || !d.Release[0].Uncordon {
		t.Errorf("released %+v, want due, uncordoned", d.Release)
	}
	if !slices.Equal(d.Owned, []string{"due", "early", "still"}) {
		t.Errorf("owned %v", d.Owned)
	}
}

// Never a node someone else took out of service, whoever it is, nor one in
// a driver upgrade, nor a NotReady one (the kubelet's taints keep work off).
func TestNeverTouchOthers(t *testing.T) {
	var nodes []quarantine.Node
	for _, a := range ledger.Actors {
		if a != ledger.Gpuops {
			nodes = append(nodes, held(broken("by-"+a, time.Hour), a, time.Hour))
		}
	}
	for _, state := range []string{operand.UpgradeRequired, operand.UpgradeDrainRequired, operand.UpgradeFailed, operand.UpgradeUncordonRequired} {
		n := broken("upgrade-"+state, time.Hour)
		n.UpgradeState = state
		nodes = append(nodes, n)
	}
	notReady := broken("not-ready", time.Hour)
	notReady.Code, notReady.Operand = health.NodeNotReady, ""
	d := decide(append(nodes, notReady))
	if !nothing(d) {
		t.Fatalf("acted: %+v", d)
	}
	for _, n := range nodes {
		want := quarantine.HeldByOther
		if n.Held == nil {
			want = quarantine.InUpgrade
		}
		if got := heldFor(d, n.Name); got != want {
			t.Errorf("%s held for %q, want %q", n.Name, got, want)
		}
	}
	if heldFor(d, "not-ready") != quarantine.NotReady {
		t.Errorf("not-ready held for %q", heldFor(d, "not-ready"))
	}
	// Done with its upgrade, the node is the quarantine's to judge again.
	done := broken("done", time.Hour)
	done.UpgradeState = operand.UpgradeDone
	if got := quarantined(decide([]quarantine.Node{done})); !slices.Equal(got, []string{"done"}) {
		t.Errorf("upgrade-done node not quarantined: %v", got)
	}
}

// Never lift what gpuops did not put: a usable node someone else holds
// stays held; one of gpuops's in a driver upgrade is the controller's to
// uncordon; one another actor has marked since keeps its cordon (only the
// record goes); a stale record, of a node someone else holds or of one back
// in service, is taken off without touching the node.
func TestOnlyLiftsItsOwn(t *testing.T) {
	person := held(fine("person", time.Hour), ledger.Person, time.Hour)
	upgrading := held(fine("upgrading", time.Hour), ledger.Gpuops, time.Hour)
	upgrading.UpgradeState = operand.UpgradeValidationRequired
	marked := held(fine("marked", time.Hour), ledger.Gpuops, time.Hour)
	marked.Marked = ledger.NVSentinel
	stale := held(fine("stale", time.Hour), ledger.Person, time.Hour)
	stale.Recorded = true
	uncordoned := fine("uncordoned", time.Hour) // by a person, the record left
	uncordoned.Recorded = true
	d := decide([]quarantine.Node{person, upgrading, marked, stale, uncordoned})
	if len(d.Release) != 1 || d.Release[0] != (quarantine.Release{Node: "marked", Uncordon: false}) {
		t.Errorf("released %+v, want only marked, its cordon kept", d.Release)
	}
	if heldFor(d, "upgrading") != quarantine.InUpgrade {
		t.Errorf("upgrading held for %q", heldFor(d, "upgrading"))
	}
	if !slices.Equal(d.Forget, []string{"stale", "uncordoned"}) {
		t.Errorf("forget %v, want stale and uncordoned", d.Forget)
	}
	if !slices.Equal(d.Owned, []string{"marked", "upgrading"}) {
		t.Errorf("owned %v", d.Owned)
	}
}

// Never on an uncertain verdict: informers not synced, a resource not
// watched, a list or watch failed within Quiet. And after a failure the
// verdict counts from the watch's return: --quarantine-after starts again.
func TestNeverUncertain(t *testing.T) {
	nodes := []quarantine.Node{broken("due", time.Hour), held(fine("back", time.Hour), ledger.Gpuops, time.Hour)}
	stale := nodes[1]
	stale.Held, stale.Recorded = nil, true
	nodes = append(nodes, stale)
	nodes[2].Name = "stale"
	for _, c := range []quarantine.Certainty{
		{Unsynced: []string{"pods"}},
		{Forbidden: []string{"controllerrevisions"}},
		{LastFailure: now.Add(-quarantine.Quiet + time.Second)},
	} {
		d := decide(nodes, func(in *quarantine.Input) { in.Certain = c })
		if !nothing(d) || d.Uncertain == "" {
			t.Errorf("%+v: acted (%+v) or no reason (%q)", c, d, d.Uncertain)
		}
		if heldFor(d, "due") != quarantine.Uncertain || heldFor(d, "back") != quarantine.Uncertain {
			t.Errorf("%+v: held %+v", c, d.Held)
		}
	}
	// Back for Quiet, the verdicts are certain, but count from then.
	d := decide(nodes, func(in *quarantine.Input) { in.Certain = quarantine.Certainty{LastFailure: now.Add(-quarantine.Quiet)} })
	if d.Uncertain != "" || len(d.Quarantine) != 0 || len(d.Release) != 0 || heldFor(d, "due") != quarantine.NotYet || heldFor(d, "back") != quarantine.NotYet {
		t.Errorf("just back: %+v", d)
	}
	d = decide(nodes, func(in *quarantine.Input) {
		in.Certain = quarantine.Certainty{LastFailure: now.Add(-quarantine.Quiet - 2*time.Minute)}
	})
	if !slices.Equal(quarantined(d), []string{"due"}) || !slices.Equal(released(d), []string{"back"}) {
		t.Errorf("back for --quarantine-after: %+v", d)
	}
}

// Never more than --quarantine-max: with 2 and four nodes due, the two
// longest unusable are quarantined and the fuse trips; with two held, a
// third due trips it without a quarantine.
func TestMax(t *testing.T) {
	nodes := []quarantine.Node{broken("a", 3*time.Minute), broken("b", 5*time.Minute), broken("c", 4*time.Minute), broken("d", 6*time.Minute)}
	d := decide(nodes, func(in *quarantine.Input) { in.Settings.Max = 2 })
	if got := quarantined(d); !slices.Equal(got, []string{"d", "b"}) || d.Trip == "" {
		t.Errorf("quarantined %v, trip %q; want d and b, and the fuse tripped", got, d.Trip)
	}
	if heldFor(d, "a") != quarantine.AtMax || heldFor(d, "c") != quarantine.AtMax {
		t.Errorf("held %+v", d.Held)
	}
	d = decide([]quarantine.Node{held(broken("x", time.Hour), ledger.Gpuops, time.Hour), held(broken("y", time.Hour), ledger.Gpuops, time.Hour), broken("z", time.Hour)},
		func(in *quarantine.Input) { in.Settings.Max = 2 })
	if len(d.Quarantine) != 0 || d.Trip == "" {
		t.Errorf("at max: %+v", d)
	}
	// At max with nothing more due: no trip.
	d = decide([]quarantine.Node{held(broken("x", time.Hour), ledger.Gpuops, time.Hour), held(broken("y", time.Hour), ledger.Gpuops, time.Hour), fine("z", time.Hour)},
		func(in *quarantine.Input) { in.Settings.Max = 2 })
	if !nothing(d) {
		t.Errorf("at max, nothing due: %+v", d)
	}
}

// The default max is 10 % of the GPU nodes, at least one.
func TestDefaultMax(t *testing.T) {
	for gpus, want := range map[int]int{1: 1, 9: 1, 10: 1, 25: 2, 100: 10} {
		if got := (quarantine.Settings{}).MaxFor(gpus); got != want {
			t.Errorf("%d GPU nodes: max %d, want %d", gpus, got, want)
		}
	}
	if got := (quarantine.Settings{Max: 3}).MaxFor(100); got != 3 {
		t.Errorf("--quarantine-max 3: %d", got)
	}
}

// The default max is a share of every GPU node, not of the nodes given: the
// actor gives only those a decision may touch.
func TestDefaultMaxOfEveryGPUNode(t *testing.T) {
	nodes := []quarantine.Node{broken("a", time.Hour), broken("b", time.Hour), broken("c", time.Hour)}
	for gpus, want := range map[int]int{30: 3, 3: 1} {
		d := decide(nodes, func(in *quarantine.Input) { in.Settings.Max, in.GPUNodes = 0, gpus })
		if got := len(d.Quarantine); got != want || d.Max != want {
			t.Errorf("%d GPU nodes, three unusable given: quarantined %d (max %d), want %d", gpus, got, d.Max, want)
		}
	}
}

// Never more than --quarantine-rate a minute, counting gpuops's own
// quarantines of the last minute (their records, so a restart counts them).
func TestRate(t *testing.T) {
	nodes := []quarantine.Node{broken("a", time.Hour), broken("b", time.Hour), broken("c", time.Hour)}
	d := decide(nodes, func(in *quarantine.Input) { in.Settings.Rate = 1 })
	if got := quarantined(d); len(got) != 1 || d.Trip != "" {
		t.Errorf("rate 1: quarantined %v, trip %q", got, d.Trip)
	}
	recent := held(broken("r", time.Hour), ledger.Gpuops, 30*time.Second)
	d = decide(append(nodes, recent), func(in *quarantine.Input) { in.Settings.Rate = 1 })
	if len(d.Quarantine) != 0 || heldFor(d, "a") != quarantine.RateLimited {
		t.Errorf("rate 1, one a minute ago: %+v", d)
	}
	older := held(broken("r", time.Hour), ledger.Gpuops, time.Minute)
	if got := quarantined(decide(append(nodes, older), func(in *quarantine.Input) { in.Settings.Rate = 1 })); len(got) != 1 {
		t.Errorf("rate 1, one a minute and more ago: quarantined %v", got)
	}
}

// A tripped fuse holds until reset: nothing is quarantined, released or
// forgotten, whatever the nodes do.
func TestFuseHolds(t *testing.T) {
	nodes := []quarantine.Node{broken("due", time.Hour), held(fine("back", time.Hour), ledger.Gpuops, time.Hour)}
	d := decide(nodes, func(in *quarantine.Input) { in.Fuse = quarantine.Fuse{Tripped: true, Since: now.Add(-time.Hour)} })
	if !nothing(d) || heldFor(d, "due") != quarantine.FuseTripped || heldFor(d, "back") != quarantine.FuseTripped {
		t.Errorf("fuse tripped: %+v", d)
	}
}

// Nodes are decided in natural name order whatever the input's.
func TestOrder(t *testing.T) {
	var nodes []quarantine.Node
	for i := 10; i >= 1; i-- {
		nodes = append(nodes, broken(fmt.Sprintf("n%d", i), time.Hour))
	}
	d := decide(nodes, func(in *quarantine.Input) { in.Settings.Rate = 3 })
	if got := quarantined(d); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Errorf("quarantined %v, want n1 n2 n3", got)
	}
}

// BenchmarkDecide: a decision given all 5,000 GPU nodes, three of them
// unusable, against one given those three alone, as the actor gives them
// (what the usable cost it when given).
func BenchmarkDecide(b *testing.B) {
	var all, few []quarantine.Node
	for i := range 5000 {
		n := fine(fmt.Sprintf("gpu-node-%04d", i), time.Hour)
		if i%1700 == 0 {
			n = broken(n.Name, time.Hour)
			few = append(few, n)
		}
		all = append(all, n)
	}
	for _, c := range []struct {
		name  string
		nodes []quarantine.Node
	}{{"5000", all}, {"the unusable", few}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := decide(c.nodes); len(d.Quarantine) != 3 {
					b.Fatalf("quarantined %v", quarantined(d))
				}
			}
		})
	}
}

// A node that is full, not broken, is never quarantined: the validator's
// workload pod refused a GPU where the pods on the node request every one
// (NVIDIA/gpu-operator#233, #481) is a note on a usable node. The same
// refusal with a GPU free (and no time of it to tell it recent) is the
// node's cause, and quarantined.
func TestNeverAFullNode(t *testing.T) {
	validator, err := operand.Lookup(operand.Real, operand.OperatorValidator)
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshot.Snapshot{Holders: map[string]snapshot.Holders{}}
	for node, held := range map[string]int64{"full": 8, "gpu-free": 7} {
		s.Nodes = append(s.Nodes, snapshot.Node{Name: node, Ready: true, Labels: map[string]string{operand.GPUPresent: "true", validator.LabelKey(): "true"},
			Devices: map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 8, Allocatable: 8}}})
		s.Pods = append(s.Pods,
			snapshot.Pod{Name: validator.DaemonSet + "-" + node, Node: node, DaemonSet: validator.DaemonSet, Phase: corev1.PodPending,
				Health: snapshot.PodHealth{Init: "plugin-validation", InitDone: 3, InitTotal: 4}},
			snapshot.Pod{Name: snapshot.PluginWorkloadPrefix + node, Node: node, Phase: corev1.PodFailed, StatusReason: snapshot.UnexpectedAdmissionError,
				Reason: "UnexpectedAdmissionError: Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"})
		s.Holders[node] = snapshot.Holders{Devices: map[string]int64{snapshot.GPUResource: held}, Pods: []string{"ml/train"}}
	}
	var nodes []quarantine.Node
	for _, h := range health.Assess(s, []operand.Operand{validator}, now, time.Hour) {
		nodes = append(nodes, quarantine.Of(h.Node, &h, now.Add(-time.Hour)))
	}
	d := decide(nodes)
	if got := quarantined(d); !slices.Equal(got, []string{"gpu-free"}) || d.Quarantine[0].Code != health.InitWaiting {
		t.Errorf("quarantined %v (%+v), want gpu-free alone, for init-waiting", got, d.Quarantine)
	}
	if heldFor(d, "full") != "" {
		t.Errorf("the full node is held as %q: it is usable", heldFor(d, "full"))
	}
}

// A workload the kubelet refused at admission is never the node's fault
// when the node is full ("Requested: 1, Available: 0"), nor when the
// device plugin's failure that refused it is older than the plugin's
// restart or than a controller's retry (health.AdmissionWithin): neither
// node is quarantined. The plugin failing to allocate lately
// (NVIDIA/k8s-device-plugin#231, a GPU lost) is, for gpus-unhealthy.
func TestNeverAFullNodesOrAStaleRefusal(t *testing.T) {
	plugin, err := operand.Lookup(operand.Real, operand.DevicePlugin)
	if err != nil {
		t.Fatal(err)
	}
	const lost = "Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 3: nvml: GPU is lost, which is unexpected"
	s := &snapshot.Snapshot{}
	for _, c := range []struct {
		node, message string
		refused       time.Time
	}{
		{"full", "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected", now.Add(-time.Minute)},
		{"restarted-since", lost, now.Add(-8 * time.Minute)},
		{"long-ago", lost, now.Add(-health.AdmissionWithin - time.Minute)},
		{"gpu-lost", lost, now.Add(-time.Minute)},
	} {
		s.Nodes = append(s.Nodes, snapshot.Node{Name: c.node, Ready: true, Labels: map[string]string{operand.GPUPresent: "true", plugin.LabelKey(): "true"},
			Devices: map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 4, Allocatable: 4}}})
		ready := now.Add(-time.Hour)
		if c.node == "restarted-since" {
			ready = now.Add(-5 * time.Minute)
		}
		s.Pods = append(s.Pods, snapshot.Pod{Name: plugin.DaemonSet + "-" + c.node, Node: c.node, DaemonSet: plugin.DaemonSet, Phase: corev1.PodRunning,
			Health: snapshot.PodHealth{Ready: true, ReadySince: ready}})
		s.Rejected = append(s.Rejected, snapshot.RejectedPod{Namespace: "ml", Name: "app-" + c.node, Node: c.node, Message: c.message, At: c.refused})
	}
	var nodes []quarantine.Node
	for _, h := range health.Assess(s, []operand.Operand{plugin}, now, time.Hour) {
		nodes = append(nodes, quarantine.Of(h.Node, &h, now.Add(-time.Hour)))
	}
	d := decide(nodes)
	if got := quarantined(d); !slices.Equal(got, []string{"gpu-lost"}) || d.Quarantine[0].Code != health.GPUsUnhealthy {
		t.Errorf("quarantined %v (%+v), want gpu-lost alone, for %s", got, d.Quarantine, health.GPUsUnhealthy)
	}
}
