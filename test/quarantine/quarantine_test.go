package quarantine_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/quarantine"
)

// The lab's breakage on one node: quarantined after --quarantine-after and
// not before, with its record and an Event; then the label fixed, the
// toolkit's pod is created on the quarantined node (daemon pods tolerate
// the cordon), the node is usable, and the quarantine is lifted after
// --release-after.
func TestQuarantineAndRelease(t *testing.T) {
	f := newFleet(t)
	broken := f.node(t, "broken", true)
	fine := f.node(t, "fine", false)
	const after, releaseAfter = 8 * time.Second, 4 * time.Second
	s := f.serve(t, "--quarantine=on", "--quarantine-after", after.String(), "--release-after", releaseAfter.String())
	began := time.Now()
	f.holds(t, after-2*time.Second, "before --quarantine-after", free, broken, fine)
	n := f.waitNode(t, broken, quarantined)
	if took := time.Since(began); took < after-time.Second {
		t.Errorf("quarantined %s after serve was ready, before --quarantine-after %s", took, after)
	}
	var rec struct{ Code, Operand string }
	if err := json.Unmarshal([]byte(n.Annotations[operand.QuarantineAnnotation]), &rec); err != nil || rec.Code != "order" || rec.Operand != "device-plugin" {
		t.Errorf("record %q (%v), want the cause order device-plugin", n.Annotations[operand.QuarantineAnnotation], err)
	}
	f.waitEvent(t, broken, "GpuopsQuarantined")
	s.WaitFor(t, "the quarantined node exported", func(m gpuopstest.Scrape) bool {
		return slices.Equal(m.LabelAtOne("gpuops_quarantined_node", "node"), []string{broken})
	})
	if free(f.get(t, fine)) == false {
		t.Errorf("the usable node %s was touched", fine)
	}

	f.repair(t, broken) // the toolkit's pod comes up on the cordoned node
	fixed := time.Now()
	n = f.waitNode(t, broken, free)
	if took := time.Since(fixed); took < releaseAfter-time.Second {
		t.Errorf("released %s after the repair, before --release-after %s", took, releaseAfter)
	}
	f.waitEvent(t, broken, "GpuopsReleased")
	r := f.c.Want(t, 0, "quarantine", "status")
	if r.Stdout != "fuse: ok\nquarantined: 0\n" {
		t.Errorf("quarantine status: %q", r.Stdout)
	}
}

// Nodes someone else took out of service — a person's kubectl cordon, the
// driver upgrade controller's cordon in the middle of an upgrade, a node
// tainted by hand — are never touched, unusable or usable again, and never
// released by gpuops; gpuops quarantine release refuses them.
func TestHandsOff(t *testing.T) {
	f := newFleet(t)
	person := f.node(t, "person", true)
	f.env.Kubectl(t, "cordon", person)
	upgrading := f.node(t, "upgrading", true)
	patch := `{"metadata":{"labels":{"` + operand.UpgradeStateLabel + `":"` + operand.UpgradeDrainRequired + `"},"annotations":{"` +
		operand.UpgradeInitialUnschedulable + `":"false"}},"spec":{"unschedulable":true}}`
	if _, err := f.env.Client.CoreV1().Nodes().Patch(context.Background(), upgrading, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: operand.UpgradeManager}); err != nil {
		t.Fatal(err)
	}
	tainted := f.node(t, "tainted", true, testcluster.WithTaints(corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}))
	personFine := f.node(t, "person-fine", false)
	f.env.Kubectl(t, "cordon", personFine)
	names := []string{person, upgrading, tainted, personFine}
	before := map[string]untouched{}
	for _, n := range names {
		// The node lifecycle controller taints a cordoned node a moment
		// after the cordon: that change is not gpuops', so wait for it.
		before[n] = stateOf(f.waitNode(t, n, taintedIfCordoned))
	}
	s := f.serve(t, "--quarantine=on", "--quarantine-after", "3s", "--release-after", "2s")
	m := s.WaitFor(t, "the three held by others", func(m gpuopstest.Scrape) bool {
		return len(m.LabelAtOne("gpuops_quarantine_held_node", "node")) == 3
	})
	for _, n := range []string{person, upgrading, tainted} {
		if !m.HasSeries("gpuops_quarantine_held_node", map[string]string{"node": n, "reason": "held-by-other"}) {
			t.Errorf("%s not held as someone else's: %v", n, m.Series("gpuops_quarantine_held_node"))
		}
	}
	if !m.HasSeries("gpuops_node_out_of_service", map[string]string{"node": person, "actor": "person"}) ||
		!m.HasSeries("gpuops_node_out_of_service", map[string]string{"node": upgrading, "actor": "upgrade-controller"}) ||
		!m.HasSeries("gpuops_node_out_of_service", map[string]string{"node": personFine, "actor": "person"}) {
		t.Errorf("the ledger: %v", m.Series("gpuops_node_out_of_service"))
	}
	f.holds(t, 8*time.Second, "someone else's node", func(n *corev1.Node) bool { return before[n.Name].equal(stateOf(n)) }, names...)
	// kubectl cordon writes as field manager kubectl.
	f.c.WantError(t, "is not quarantined by gpuops (cordoned by person (kubectl) since ", "quarantine", "release", person)
	if got := f.get(t, person); !got.Spec.Unschedulable {
		t.Errorf("quarantine release uncordoned %s", person)
	}
}

// taintedIfCordoned: a cordoned node carries the taint the node lifecycle
// controller adds for it.
func taintedIfCordoned(n *corev1.Node) bool {
	return !n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeUnschedulable
	})
}

// The fuse: with --quarantine-max 2 and four nodes breaking, exactly two
// are quarantined, the fuse trips (status exit 1, the metric), and nothing
// more changes — not even the release of the two, repaired — until
// gpuops quarantine reset; then the two are released.
func TestFuse(t *testing.T) {
	f := newFleet(t)
	var broken []string
	for _, s := range []string{"a", "b", "c", "d"} {
		broken = append(broken, f.node(t, s, true))
	}
	s := f.serve(t, "--quarantine=on", "--quarantine-after", "3s", "--release-after", "2s", "--quarantine-max", "2", "--quarantine-rate", "10")
	// The fuse's series is the actor's own state, the quarantined nodes'
	// the next batch's: a scrape between the two shows the fuse tripped
	// before the nodes it stopped at.
	m := s.WaitFor(t, "the fuse tripped and two nodes quarantined", func(m gpuopstest.Scrape) bool {
		v, _ := m.Value("gpuops_quarantine_fuse_tripped", nil)
		return v == 1 && len(m.LabelAtOne("gpuops_quarantined_node", "node")) >= 2
	})
	held := m.LabelAtOne("gpuops_quarantined_node", "node")
	if len(held) != 2 {
		t.Fatalf("quarantined %v, want two", held)
	}
	var others []string
	for _, n := range broken {
		if !slices.Contains(held, n) {
			others = append(others, n)
		}
	}
	r := f.c.Want(t, 1, "quarantine", "status")
	if want := "quarantined: 2\n" + held[0]; !strings.Contains(r.Stdout, "fuse: TRIPPED since ") || !strings.Contains(r.Stdout, want) {
		t.Errorf("quarantine status:\n%s", r.Stdout)
	}
	for _, n := range held {
		f.repair(t, n)
	}
	f.holds(t, 6*time.Second, "the fuse holds the quarantined", quarantined, held...)
	f.holds(t, time.Second, "the fuse holds the others", free, others...)
	for _, n := range others {
		f.repair(t, n)
	}
	f.c.Want(t, 0, "quarantine", "reset")
	for _, n := range held {
		f.waitNode(t, n, free)
	}
	r = f.c.Want(t, 0, "quarantine", "status")
	if r.Stdout != "fuse: ok\nquarantined: 0\n" {
		t.Errorf("quarantine status after the reset: %q", r.Stdout)
	}
}

// Two replicas: exactly one acts, the Lease holder; the other exports.
// Killed mid-way, the leader is replaced: no node quarantined twice, and
// the new leader releases what the old one quarantined.
func TestTwoReplicas(t *testing.T) {
	f := newFleet(t)
	broken := f.node(t, "broken", true)
	args := []string{"--quarantine=on", "--quarantine-after", "4s", "--release-after", "2s"}
	a, b := f.serve(t, args...), f.serve(t, args...)
	leader := func(s *gpuopstest.Server) float64 {
		v, _ := s.Scrape(t).Value("gpuops_quarantine_leader", nil)
		return v
	}
	a.WaitFor(t, "one leader", func(gpuopstest.Scrape) bool { return leader(a)+leader(b) == 1 })
	first, other := a, b
	if leader(b) == 1 {
		first, other = b, a
	}
	f.waitNode(t, broken, quarantined)
	f.holds(t, 3*time.Second, "still one leader", func(*corev1.Node) bool { return leader(first) == 1 && leader(other) == 0 }, broken)
	f.waitEvent(t, broken, "GpuopsQuarantined")

	first.Kill()
	other.WaitFor(t, "the other replica leading", func(m gpuopstest.Scrape) bool {
		v, _ := m.Value("gpuops_quarantine_leader", nil)
		return v == 1
	})
	f.repair(t, broken)
	f.waitNode(t, broken, free)
	f.waitEvent(t, broken, "GpuopsReleased")
	var quarantines int
	for _, r := range f.events(t, broken) {
		if r == "GpuopsQuarantined" {
			quarantines++
		}
	}
	if quarantines != 1 {
		t.Errorf("%d GpuopsQuarantined Events on %s, want 1: %v", quarantines, broken, f.events(t, broken))
	}
}

// The API server stopped for 30 s: no action on the verdict of before
// (the lease is lost; leading again, the actor waits quarantine.Quiet for
// the watches to catch up: a node repaired at once is released no sooner);
// normal service after.
func TestAPIServerStopped(t *testing.T) {
	f := newFleet(t)
	api := testcluster.OwnAPIServer(t, f.env)
	broken := f.node(t, "broken", true)
	s := f.serve(t, "--quarantine=on", "--quarantine-after", "3s", "--release-after", "2s")
	f.waitNode(t, broken, quarantined)
	s.WaitFor(t, "the quarantine exported", func(m gpuopstest.Scrape) bool { return len(m.LabelAtOne("gpuops_quarantined_node", "node")) == 1 })
	api.Stop(t)
	time.Sleep(30 * time.Second)
	api.Resume(t)
	back := time.Now()
	s.WaitFor(t, "uncertain after the outage", func(m gpuopstest.Scrape) bool {
		v, _ := m.Value("gpuops_quarantine_uncertain", nil)
		return v == 1
	})
	f.repair(t, broken)
	f.waitNode(t, broken, free)
	if took := time.Since(back); took < quarantine.Quiet {
		t.Errorf("released %s after the API server came back, within the quiet time %s", took, quarantine.Quiet)
	}
	s.WaitFor(t, "certain again", func(m gpuopstest.Scrape) bool {
		v, ok := m.Value("gpuops_quarantine_uncertain", nil)
		return ok && v == 0
	})
	if lines := s.Stderr.All(); slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "E") }) {
		t.Errorf("library log lines on stderr:\n%s", strings.Join(lines, "\n"))
	}
}

// dry-run writes nothing — no node change (spec, labels, annotations), no
// Lease, no fuse ConfigMap, no Event — not even past --quarantine-max,
// where it trips a fuse of its own; its log and metrics say what on would
// do, and the nodes it exports as quarantined are those on then
// quarantines.
func TestDryRun(t *testing.T) {
	f := newFleet(t)
	var names []string
	for _, n := range []string{"a", "b", "c"} {
		names = append(names, f.node(t, n, n != "c"))
	}
	before := f.written(t, names...)
	args := []string{"--quarantine-after", "3s", "--release-after", "2s", "--quarantine-max", "5", "--quarantine-rate", "5"}
	dry := f.serve(t, append([]string{"--quarantine=dry-run"}, args...)...)
	tripping := f.serve(t, "--quarantine=dry-run", "--quarantine-after", "3s", "--quarantine-max", "1", "--quarantine-rate", "5")
	m := dry.WaitFor(t, "the nodes it would quarantine", func(m gpuopstest.Scrape) bool { return len(m.LabelAtOne("gpuops_quarantined_node", "node")) == 2 })
	would := m.LabelAtOne("gpuops_quarantined_node", "node")
	if !m.HasSeries("gpuops_quarantined_node", map[string]string{"mode": "dry-run"}) {
		t.Errorf("not exported as dry-run: %v", m.Series("gpuops_quarantined_node"))
	}
	for _, n := range would {
		dry.Stderr.Said(t, "quarantine: would quarantine "+n+" (order device-plugin)")
	}
	tripping.WaitFor(t, "its fuse tripped", func(m gpuopstest.Scrape) bool {
		v, _ := m.Value("gpuops_quarantine_fuse_tripped", nil)
		trips, _ := m.Value("gpuops_quarantine_actions_total", map[string]string{"action": "trip", "mode": "dry-run"})
		return v == 1 && trips == 1
	})
	tripping.Stderr.Said(t, "quarantine: would trip the fuse (")
	f.holds(t, 4*time.Second, "dry-run", func(n *corev1.Node) bool { return before.nodes[n.Name].equal(stateOf(n)) }, names...)
	f.written(t, names...).unchanged(t, before)
	dry.Kill()
	tripping.Kill()

	on := f.serve(t, append([]string{"--quarantine=on"}, args...)...)
	m = on.WaitFor(t, "the nodes quarantined", func(m gpuopstest.Scrape) bool { return len(m.LabelAtOne("gpuops_quarantined_node", "node")) == 2 })
	if got := m.LabelAtOne("gpuops_quarantined_node", "node"); !slices.Equal(got, would) {
		t.Errorf("on quarantined %v; dry-run would have %v", got, would)
	}
	for _, n := range names {
		if got := quarantined(f.get(t, n)); got != slices.Contains(would, n) {
			t.Errorf("node %s quarantined %v, want %v", n, got, slices.Contains(would, n))
		}
	}
	for _, n := range would {
		on.Stderr.Said(t, "quarantine: quarantine "+n+" (order device-plugin)")
	}
}

// The rights: with the base's alone (kustomize/deploy/rbac), serve
// --quarantine=on says once that the quarantine is unavailable and touches
// nothing; with the component kustomize/deploy/quarantine it acts. Both
// under the service account's own token.
func TestRights(t *testing.T) {
	env := testcluster.New(t)
	env.Timeout = patience
	ns := kube.DefaultNamespace
	if _, err := env.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	f := newFleetIn(t, env, ns)
	broken := f.node(t, "broken", true)
	const base = "../../kustomize/deploy/rbac"
	env.Kubectl(t, "apply", "--server-side", "-k", base)
	t.Cleanup(func() { env.Kubectl(t, "delete", "-k", base, "--ignore-not-found") })
	f.c.Kubeconfig = env.AccountKubeconfig(t, ns, "gpuops-judge-serve")

	s := f.serve(t, "--quarantine=on", "--quarantine-after", "2s")
	f.holds(t, 5*time.Second, "read-only", free, broken)
	var said []string
	for _, l := range s.Stderr.All() {
		if strings.Contains(l, "quarantine") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "quarantine unavailable, serving read-only: forbidden: needs get,patch nodes") {
		t.Errorf("serve with the base's rights said %q, want once that the quarantine is unavailable", said)
	}
	s.Kill()

	const component = "testdata/rights"
	env.Kubectl(t, "apply", "--server-side", "-k", component)
	t.Cleanup(func() { env.Kubectl(t, "delete", "-k", component, "--ignore-not-found") })
	f.serve(t, "--quarantine=on", "--quarantine-after", "2s")
	f.waitNode(t, broken, quarantined)
	f.waitEvent(t, broken, "GpuopsQuarantined")
}

// Bad input changes nothing: with a node quarantined and the fuse tripped
// (something to release and to reset), every bad flag value of serve
// --quarantine and every bad use of gpuops quarantine is one error line,
// exit 2, and leaves the nodes, the Lease, the fuse and the Events as they
// were. (cmd/gpuops's TestBadQuarantineInput has the cases that need no
// cluster, without one.)
func TestBadInput(t *testing.T) {
	f := newFleet(t)
	a, b := f.node(t, "a", true), f.node(t, "b", true)
	s := f.serve(t, "--quarantine=on", "--quarantine-after", "2s", "--quarantine-max", "1", "--quarantine-rate", "5")
	s.WaitFor(t, "the fuse tripped", func(m gpuopstest.Scrape) bool {
		v, _ := m.Value("gpuops_quarantine_fuse_tripped", nil)
		return v == 1 && len(m.LabelAtOne("gpuops_quarantined_node", "node")) == 1
	})
	s.Kill()
	held := a
	if quarantined(f.get(t, b)) {
		held = b
	}
	absent := f.env.NodeName("absent")
	on := []string{"serve", "--listen", "127.0.0.1:0", "--quarantine=on", "--quarantine-after", "1s", "--release-after", "1s"}
	before := f.written(t, a, b)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(on, "--quarantine=maybe"), `unknown --quarantine "maybe"`},
		{append(on, "--quarantine-after=0s"), "--quarantine-after 0s: want a positive duration"},
		{append(on, "--release-after=-1m"), "--release-after -1m0s: want a positive duration"},
		{append(on, "--quarantine-max=0"), "--quarantine-max 0: want 1 or more"},
		{append(on, "--quarantine-max=-1"), "--quarantine-max -1: want 1 or more"},
		{append(on, "--quarantine-rate=-1"), "--quarantine-rate -1: want 1 or more"},
		{[]string{"quarantine", "release"}, "want exactly one NODE, got 0 arguments"},
		{[]string{"quarantine", "release", held, held}, "want exactly one NODE, got 2 arguments"},
		{[]string{"quarantine", "release", absent}, `nodes "` + absent + `" not found`},
		{[]string{"quarantine", "reset", held}, "unexpected arguments"},
		{[]string{"quarantine", "releas", held}, `unknown command "releas" for "quarantine"`},
	} {
		name := strings.Join(tc.args, " ")
		if tc.args[0] == "serve" {
			name = "serve " + tc.args[len(tc.args)-1]
		}
		t.Run(name, func(t *testing.T) {
			cmd := f.c.Command(t, tc.args...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			// A run that is not refused (serve would run on) is killed,
			// and fails the check.
			stop := time.AfterFunc(patience, func() { _ = cmd.Process.Kill() })
			_ = cmd.Run()
			stop.Stop()
			gpuopstest.Output{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}.OneLineError(t, tc.want)
			f.written(t, a, b).unchanged(t, before)
		})
	}
	if !quarantined(f.get(t, held)) {
		t.Errorf("%s no longer quarantined", held)
	}
}
