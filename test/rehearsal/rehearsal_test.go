// Package rehearsal_test rehearses a driver upgrade on a real control plane
// (pkg/rehearsal: the upgrade controller's and the driver manager's writes,
// the real DaemonSet controller making the driver pods again, KWOK holding
// one crash-looping) and checks, at every step, what gpuops says of it:
// gpuops upgrades, audit and health as a user runs them, and a gpuops serve
// process judging live all along.
package rehearsal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/workspace"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// Short names of the verdicts and health causes in the table.
const (
	O = upgrade.Outdated
	W = upgrade.Waiting // upgrade-required: the cluster has no ClusterPolicy, so autoUpgrade is off
	P = upgrade.InProgress
	F = upgrade.Failed
	D = upgrade.Done

	ok = ""                                             // READY
	pa = health.Paused + "/" + operand.ContainerToolkit // the driver manager's pause: the toolkit is the first link it stops
	cl = health.CrashLoop + "/" + operand.Driver        // the new driver pod crash-loops
	uf = health.UpgradeFailed + "/" + operand.Driver    // the controller failed the upgrade
)

// row is what gpuops must say after one step of the walk: of nodes a, b
// and c, the upgrade verdict (pkg/upgrade's rules: no state and the driver
// pod on the latest template is done, on an older one outdated;
// upgrade-required waits, as no policy turns autoUpgrade on; the states in
// between are in progress, none held past --stuck-after; upgrade-failed is
// failed; upgrade-done on the latest template is done, also while cordoned
// by someone other than the controller) and the health causes, root and
// further ones (pkg/health: ready but for the driver manager's pause of the
// toolkit and what waits behind it, the crash-looping driver, and the
// failed upgrade, which is the driver's failure whatever its pod shows).
type row struct {
	node, state string // the node the step acted on ("" all) and its state label after it
	verdicts    [3]string
	health      [3]string
}

// walk is the rehearsal's steps, one node at a time, with gpuops's health
// of a, b and c after each and the upgrade verdicts of one table (three
// letters a step, as the short names above, e.g. "PWW"). A node cordoned
// before the upgrade (cordoned) is not cordoned again and skips
// uncordon-required; the last node, c, crash-loops and fails, then
// recovers.
func walk(cordoned string, verdicts string) []row {
	var rows []row
	v := strings.Fields(verdicts)
	add := func(node, state, h string) {
		r := row{node: node, state: state, health: [3]string{ok, ok, ok}}
		for i, c := range v[len(rows)] {
			r.verdicts[i] = map[rune]string{'O': O, 'W': W, 'P': P, 'F': F, 'D': D}[c]
		}
		if node != "" {
			r.health[node[0]-'a'] = h
		}
		rows = append(rows, r)
	}
	add("", "", ok) // the new driver template
	for _, n := range []string{"a", "b", "c"} {
		add(n, operand.UpgradeRequired, ok)
	}
	for _, n := range []string{"a", "b", "c"} {
		add(n, operand.UpgradeCordonRequired, ok)
		if n != cordoned {
			add(n, operand.UpgradeCordonRequired, ok) // cordoned
		}
		for _, s := range []string{operand.UpgradeWaitForJobsRequired, operand.UpgradePodDeletionRequired, operand.UpgradeDrainRequired, operand.UpgradePodRestartRequired} {
			add(n, s, ok)
		}
		add(n, operand.UpgradePodRestartRequired, ok) // new driver pod
		add(n, operand.UpgradePodRestartRequired, pa) // paused
		add(n, operand.UpgradePodRestartRequired, ok) // resumed
		if n == "c" {
			add(n, operand.UpgradePodRestartRequired, cl) // crash-loops
			add(n, operand.UpgradeFailed, uf)
			add(n, operand.UpgradeFailed, uf)        // fixed: a new driver pod
			add(n, operand.UpgradeFailed, uf+"+"+pa) // its driver manager pauses
			add(n, operand.UpgradeFailed, uf)
		} else {
			add(n, operand.UpgradeValidationRequired, ok)
		}
		if n != cordoned {
			add(n, operand.UpgradeUncordonRequired, ok)
			add(n, operand.UpgradeUncordonRequired, ok) // uncordoned
		}
		add(n, operand.UpgradeDone, ok)
	}
	add("", "", ok) // the template rolled back
	add("", "", ok) // the controller's labels off
	add("", "", ok) // the deploy labels back under gpuops
	if len(rows) != len(v) {
		panic(fmt.Sprintf("the walk has %d steps, the verdicts %d", len(rows), len(v)))
	}
	return rows
}

// The walk with b cordoned by someone before the upgrade, without a
// ClusterPolicy: upgrade-required waits, as no policy turns autoUpgrade
// on, and only the node the walk is on is in progress.
var table = walk("b", `OOO WOO WWO WWW
	PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW DWW
	DPW DPW DPW DPW DPW DPW DPW DPW DPW DDW
	DDP DDP DDP DDP DDP DDP DDP DDP DDP DDP DDF DDF DDF DDF DDP DDP DDD
	DDD DDD DDD`)

// TestDriverUpgradeRehearsal walks three driver nodes beside one whose host
// has the driver (never part of the rollout, always ready) and one without
// a GPU, and checks gpuops at every step against the table.
func TestDriverUpgradeRehearsal(t *testing.T) {
	r := newRig(t, true)
	r.rehearse(table)
	r.g.checkEvents(context.Background())

	// Restorable: up finds nothing foreign, reset leaves no deploy label,
	// and the whole lab with the rehearsal runs again from the command.
	ctx, env := context.Background(), r.g.env
	if _, err := provision.Up(ctx, env.Client, r.lab, assets, r.ws, provision.Options{Timeout: env.Timeout}); err != nil {
		t.Fatalf("up after the rehearsal: %v", err)
	}
	if err := provision.Reset(ctx, env.Client, env.Namespace, provision.Options{Timeout: env.Timeout}); err != nil {
		t.Fatalf("reset after the rehearsal: %v", err)
	}
	for _, name := range r.g.names {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range n.Labels {
			if operand.IsDeployLabel(k) || k == operand.UpgradeStateLabel {
				t.Errorf("after reset, node %s keeps %s=%s", name, k, n.Labels[k])
			}
		}
	}
	r.g.checkCommand(r.spec)
}

var assets = provision.Assets{Kustomize: gpuops.Kustomize, Scripts: gpuops.Scripts}

// rig is one test's lab: nodes a, b, c with a driver, host (the host's
// driver), cpu (no GPU), the lab's DaemonSets up, gpuops serve running.
type rig struct {
	t    *testing.T
	g    *gpuopsView
	lab  *labspec.Lab
	spec string
	ws   workspace.Workspace
}

func newRig(t *testing.T, cordonB bool) *rig {
	env := testcluster.New(t)
	env.Timeout = 2 * time.Minute
	gpus := testcluster.WithCapacity(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")})
	names := map[string]string{}
	for _, short := range []string{"a", "b", "c", "host", "cpu"} {
		names[short] = env.NodeName(short)
		var opts []testcluster.NodeOption
		if short != "cpu" { // a node without a GPU advertises none
			opts = append(opts, gpus)
		}
		if short == "b" && cordonB {
			opts = append(opts, testcluster.Unschedulable())
		}
		env.AddNode(t, names[short], nil, opts...)
	}
	spec := fmt.Sprintf(`namespace: %s
nodes:
- {name: %s, labels: {%s: "true"}, operands: {driver: true, container-toolkit: true, device-plugin: true, gpu-feature-discovery: true, dcgm-exporter: true}}
- {name: %s, labels: {%s: "true"}, operands: {driver: true, container-toolkit: true, device-plugin: true, gpu-feature-discovery: true, dcgm-exporter: true}}
- {name: %s, labels: {%s: "true"}, operands: {driver: true, container-toolkit: true, device-plugin: true, gpu-feature-discovery: true, dcgm-exporter: true}}
- {name: %s, labels: {%s: "true"}, operands: {driver: false, container-toolkit: true, device-plugin: true, gpu-feature-discovery: true, dcgm-exporter: true}}
- {name: %s}
`, env.Namespace, names["a"], operand.GPUPresent, names["b"], operand.GPUPresent, names["c"], operand.GPUPresent,
		names["host"], operand.GPUPresent, names["cpu"])
	lab, err := labspec.Parse([]byte(spec), operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, lab: lab, spec: spec, ws: workspace.New(t.TempDir()),
		g: &gpuopsView{t: t, gpuops: gpuopstest.On(env), env: env, names: names}}
	if _, err := provision.Up(context.Background(), env.Client, lab, assets, r.ws, provision.Options{Timeout: env.Timeout}); err != nil {
		t.Fatal(err)
	}
	return r
}

// rehearse walks the lab's nodes, the last failing, and checks every step
// against the table, with gpuops serve judging live from before the first.
func (r *rig) rehearse(table []row) {
	t, g := r.t, r.g
	g.startServe()
	var nodes []string
	for _, n := range r.lab.Nodes {
		nodes = append(nodes, n.Name)
	}
	steps := 0
	err := rehearsal.Run(context.Background(), g.env.Client, rehearsal.Options{Namespace: g.env.Namespace, Nodes: nodes, FailLast: true, Timeout: g.env.Timeout,
		Step: func(ctx context.Context, s rehearsal.Step) error {
			steps++
			if s.N > len(table) {
				t.Errorf("step %d (%s): the table has %d rows", s.N, s.What, len(table))
				return nil
			}
			want := table[s.N-1]
			if s.Node != g.names[want.node] || s.State != want.state {
				t.Fatalf("step %d (%s): on %q in %q, the table says %q in %q", s.N, s.What, s.Node, s.State, g.names[want.node], want.state)
			}
			g.check(ctx, s, want, s.N > 1 && table[s.N-2].state == operand.UpgradeFailed)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if steps != len(table) {
		t.Errorf("%d steps, the table has %d", steps, len(table))
	}
}

// gpuopsView runs gpuops as a user does and keeps a serve process.
type gpuopsView struct {
	t      *testing.T
	gpuops gpuopstest.Cluster // the test cluster in the rig's namespace
	env    *testcluster.Env
	names  map[string]string
	serve  *gpuopstest.Server
}

// args narrow a command to the rig's nodes.
func (g *gpuopsView) args(cmd ...string) []string {
	return append(cmd, "-l", testcluster.LabelTestID+"="+g.env.ID)
}

// check compares what gpuops says after the step with the table.
// failedBefore says the step before left c failed already.
func (g *gpuopsView) check(ctx context.Context, s rehearsal.Step, want row, failedBefore bool) {
	t := g.t
	t.Helper()
	at := fmt.Sprintf("step %d (%s)", s.N, s.What)
	walked := []string{g.names["a"], g.names["b"], g.names["c"]}

	r := g.gpuops.Run(t, g.args("upgrades", "-o", "json")...)
	var rollout struct{ Nodes []upgrade.Node }
	if err := json.Unmarshal([]byte(r.Stdout), &rollout); err != nil {
		t.Fatalf("%s: upgrades -o json: exit %d, %v\n%s%s", at, r.Code, err, r.Stdout, r.Stderr)
	}
	failed := slices.Contains(want.verdicts[:], F)
	if code := map[bool]int{false: 0, true: 1}[failed]; r.Code != code {
		t.Errorf("%s: upgrades exit %d, want %d\n%s", at, r.Code, code, r.Stderr)
	}
	got := map[string]upgrade.Node{}
	for _, n := range rollout.Nodes {
		got[n.Node] = n
	}
	if len(got) != len(walked) {
		t.Errorf("%s: upgrades lists %d nodes, want the %d with a driver pod: %+v", at, len(got), len(walked), rollout.Nodes)
	}
	for i, n := range walked {
		if got[n].Verdict != want.verdicts[i] {
			t.Errorf("%s: upgrades %s: %s (%s, %s), want %s", at, n, got[n].Verdict, got[n].State, got[n].Cause, want.verdicts[i])
		}
	}
	if s.State == operand.UpgradeFailed && !failedBefore {
		// the controller has just failed c: the cause is its driver pod's restarts
		if c := got[g.names["c"]].Cause; !strings.Contains(c, fmt.Sprintf("restarted %d times", operand.UpgradeMaxRestarts+1)) {
			t.Errorf("%s: the failed node's cause %q does not name the driver pod's restarts", at, c)
		}
	}

	// No finding on any node, whatever the driver manager paused.
	r = g.gpuops.Run(t, g.args("audit")...)
	if r.Code != 0 || strings.Count(r.Stdout, " OK\n") != len(g.names) {
		t.Errorf("%s: audit: exit %d\n%s%s", at, r.Code, r.Stdout, r.Stderr)
	}

	wantHealth := map[string]string{g.names["host"]: ok}
	for i, n := range walked {
		wantHealth[n] = want.health[i]
	}
	r = g.gpuops.Run(t, g.args("health", "-o", "json")...)
	var hs struct{ Nodes []health.Node }
	if err := json.Unmarshal([]byte(r.Stdout), &hs); err != nil {
		t.Fatalf("%s: health -o json: exit %d, %v\n%s%s", at, r.Code, err, r.Stdout, r.Stderr)
	}
	for _, h := range hs.Nodes {
		w, judged := wantHealth[h.Node]
		if judged != h.Judged {
			t.Errorf("%s: health %s judged %v, want %v", at, h.Node, h.Judged, judged)
		}
		if judged && causes(h) != w {
			t.Errorf("%s: health %s: %q, want %q", at, h.Node, causes(h), w)
		}
	}
	// serve's rollout: the table's verdict and the node's state label.
	wantRollout := map[string]string{}
	for i, name := range walked {
		n, err := g.env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantRollout[name] = want.verdicts[i] + "/" + n.Labels[operand.UpgradeStateLabel]
	}
	g.checkServe(ctx, at, wantHealth, wantRollout)
	g.checkManagers(ctx, at, s)
}

// causes is a node's health as the table writes it: the root cause, then
// the further ones, code/operand joined by "+"; "" when ready.
func causes(h health.Node) string {
	if h.Cause == nil {
		return ok
	}
	out := []string{h.Cause.Code + "/" + h.Cause.Operand}
	for _, c := range h.Also {
		out = append(out, c.Code+"/"+c.Operand)
	}
	return strings.Join(out, "+")
}
