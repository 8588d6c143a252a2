package metrics_test

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/metrics"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

func node(name string, asked, missing, findings, present []string, reasons ...explain.Reason) *verdict.Verdict {
	v := &verdict.Verdict{
		Node:    name,
		Audit:   judge.NodeAudit{Node: name, Missing: missing, Asked: asked},
		Order:   judge.NodeOrder{Node: name, Findings: findings},
		Row:     judge.MatrixRow{Node: name, Present: judge.NewPresent(present, present...)},
		Explain: &explain.Report{},
	}
	for _, m := range missing {
		v.Explain.Missing = append(v.Explain.Missing, explain.Missing{Node: name, Operand: m, Reasons: reasons})
	}
	return v
}

var (
	roster = []operand.Operand{operand.Lab.ContainerToolkit(), operand.Lab.DevicePlugin()}
	rules  = []operand.Rule{operand.DeviceRule}
	all    = []string{"container-toolkit", "device-plugin"}
	t0     = time.Unix(1_700_000_000, 0)

	healthy = node("a", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	broken  = node("b", all, []string{"container-toolkit"}, []string{"device-plugin-without-toolkit"}, []string{"device-plugin"},
		explain.Reason{Code: explain.NodeCordoned}, explain.Reason{Code: explain.PodPending}, explain.Reason{Code: explain.PodPending})
	repaired = node("b", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
)

func synced() map[live.Resource]bool {
	return map[live.Resource]bool{live.Nodes: true, live.Pods: false}
}

const names = "gpuops_operand_missing gpuops_operand_missing_reason gpuops_order_violation gpuops_nodes " +
	"gpuops_operand_desired_nodes gpuops_operand_running_nodes gpuops_last_change_timestamp_seconds " +
	"gpuops_informer_synced gpuops_watch_errors_total"

func check(t *testing.T, e *metrics.Exporter, want string) {
	t.Helper()
	if err := compare(t, e, want, strings.Fields(names)...); err != nil {
		t.Error(err)
	}
}

const help = `
# HELP gpuops_informer_synced 1 once the watch of the resource has delivered its initial list.
# TYPE gpuops_informer_synced gauge
gpuops_informer_synced{resource="nodes"} 1
gpuops_informer_synced{resource="pods"} 0
# HELP gpuops_watch_errors_total Failed lists and watches, by resource; each is retried.
# TYPE gpuops_watch_errors_total counter
`

func TestBeforeTheFirstVerdict(t *testing.T) {
	e := metrics.New(synced)
	e.WatchFailed(live.Pods, errors.New("connection refused"))
	// No counts yet: zeros would read as "all fine".
	check(t, e, help+`gpuops_watch_errors_total{resource="nodes"} 0
gpuops_watch_errors_total{resource="pods"} 1
`)
}

func TestFindingsComeAndGo(t *testing.T) {
	e := metrics.New(synced)
	e.Judged(verdict.Batch{Time: t0, Initial: true, Roster: roster, Rules: rules, Changes: []verdict.Change{{After: healthy}, {After: broken}}})
	check(t, e, help+`gpuops_watch_errors_total{resource="nodes"} 0
gpuops_watch_errors_total{resource="pods"} 0
# HELP gpuops_last_change_timestamp_seconds When a finding last started or ended on any node (the first verdict counts), in Unix seconds.
# TYPE gpuops_last_change_timestamp_seconds gauge
gpuops_last_change_timestamp_seconds 1.7e+09
# HELP gpuops_operand_missing 1 while an operand that the node's deploy label asks for has no Running pod there.
# TYPE gpuops_operand_missing gauge
gpuops_operand_missing{node="b",operand="container-toolkit"} 1
# HELP gpuops_operand_missing_reason 1 for each reason why an operand is missing on a node (the codes of gpuops audit --explain).
# TYPE gpuops_operand_missing_reason gauge
gpuops_operand_missing_reason{node="b",operand="container-toolkit",reason="node-cordoned"} 1
gpuops_operand_missing_reason{node="b",operand="container-toolkit",reason="pod-pending"} 1
# HELP gpuops_order_violation 1 while a node runs an operand without the one it needs (a rule of the start-up order is broken).
# TYPE gpuops_order_violation gauge
gpuops_order_violation{needs="container-toolkit",node="b",operand="device-plugin",rule="device-plugin-without-toolkit"} 1
# HELP gpuops_nodes Nodes judged, by state: ok, or finding (an operand missing or stuck, or a rule broken).
# TYPE gpuops_nodes gauge
gpuops_nodes{state="finding"} 1
gpuops_nodes{state="ok"} 1
# HELP gpuops_operand_desired_nodes Nodes whose deploy label asks for the operand (value exactly "true").
# TYPE gpuops_operand_desired_nodes gauge
gpuops_operand_desired_nodes{operand="container-toolkit"} 2
gpuops_operand_desired_nodes{operand="device-plugin"} 2
# HELP gpuops_operand_running_nodes Nodes with a Running pod of the operand.
# TYPE gpuops_operand_running_nodes gauge
gpuops_operand_running_nodes{operand="container-toolkit"} 1
gpuops_operand_running_nodes{operand="device-plugin"} 2
`)

	// A change that is not a finding's leaves the last change where it was.
	moved := node("a", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	moved.Audit.Asked = all[:1]
	e.Judged(verdict.Batch{Time: t0.Add(time.Minute), Roster: roster, Rules: rules, Changes: []verdict.Change{{Before: healthy, After: moved}}})
	if got := family(t, e, "gpuops_last_change_timestamp_seconds").GetMetric()[0].GetGauge().GetValue(); got != 1.7e9 {
		t.Errorf("last change %v after a change without findings", got)
	}

	// The fix ends both findings, and their series; the other node goes.
	e.Judged(verdict.Batch{Time: t0.Add(2 * time.Second), Roster: roster, Rules: rules, Changes: []verdict.Change{{Before: moved}, {Before: broken, After: repaired}}})
	check(t, e, help+`gpuops_watch_errors_total{resource="nodes"} 0
gpuops_watch_errors_total{resource="pods"} 0
# HELP gpuops_last_change_timestamp_seconds When a finding last started or ended on any node (the first verdict counts), in Unix seconds.
# TYPE gpuops_last_change_timestamp_seconds gauge
gpuops_last_change_timestamp_seconds 1.700000002e+09
# HELP gpuops_nodes Nodes judged, by state: ok, or finding (an operand missing or stuck, or a rule broken).
# TYPE gpuops_nodes gauge
gpuops_nodes{state="finding"} 0
gpuops_nodes{state="ok"} 1
# HELP gpuops_operand_desired_nodes Nodes whose deploy label asks for the operand (value exactly "true").
# TYPE gpuops_operand_desired_nodes gauge
gpuops_operand_desired_nodes{operand="container-toolkit"} 1
gpuops_operand_desired_nodes{operand="device-plugin"} 1
# HELP gpuops_operand_running_nodes Nodes with a Running pod of the operand.
# TYPE gpuops_operand_running_nodes gauge
gpuops_operand_running_nodes{operand="container-toolkit"} 1
gpuops_operand_running_nodes{operand="device-plugin"} 1
`)
}

// family is one metric family of the exporter's /metrics.
func family(t *testing.T, e *metrics.Exporter, name string) *dto.MetricFamily {
	t.Helper()
	f, ok := scrape(t, e)[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return f
}

func TestHistogramCountsBatches(t *testing.T) {
	e := metrics.New(synced)
	for i := range 3 {
		e.Judged(verdict.Batch{Time: t0, Initial: i == 0, Roster: roster, Took: time.Millisecond})
	}
	h := family(t, e, "gpuops_judgement_duration_seconds").GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 0.003 {
		t.Errorf("histogram count %d sum %v, want 3 and 0.003", h.GetSampleCount(), h.GetSampleSum())
	}
}

// TestDocsListEveryMetric: the names are an API, written down in
// docs/metrics.md.
func TestDocsListEveryMetric(t *testing.T) {
	docs, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	metrics.New(synced).Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := metrics.FamilyNames()
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names = append(names, m[1])
	}
	for _, name := range names {
		if !strings.Contains(string(docs), "| `"+name+"` |") {
			t.Errorf("docs/metrics.md has no row for %s", name)
		}
	}
	if len(names) != 24 {
		t.Errorf("%d metrics, want 24", len(names))
	}
}

// A pause that lasts is audit's STUCK: a finding of its own series, and
// the node counts as one with a finding.
func TestStuckPause(t *testing.T) {
	e := metrics.New(synced)
	stuck := node("c", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	stuck.Audit.Stuck = []string{"device-plugin"}
	e.Judged(verdict.Batch{Time: t0, Initial: true, Roster: roster, Rules: rules, Changes: []verdict.Change{{After: healthy}, {After: stuck}}})
	want := `
# HELP gpuops_operand_stuck 1 while a helper's pause of an operand on the node has lasted longer than --stuck-after (audit's STUCK).
# TYPE gpuops_operand_stuck gauge
gpuops_operand_stuck{node="c",operand="device-plugin"} 1
# HELP gpuops_nodes Nodes judged, by state: ok, or finding (an operand missing or stuck, or a rule broken).
# TYPE gpuops_nodes gauge
gpuops_nodes{state="finding"} 1
gpuops_nodes{state="ok"} 1
`
	if err := compare(t, e, want, "gpuops_operand_stuck", "gpuops_nodes"); err != nil {
		t.Error(err)
	}
}

// A GPU node's health is one series, and its root cause another with
// bounded labels: a code and an operand, never a message; each host fault
// its failing containers' logs name (serve --logs) one more, however many
// logs name it.
func TestNodeHealth(t *testing.T) {
	e := metrics.New(synced)
	ready := node("a", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	ready.Health = &health.Node{Node: "a", Judged: true, Usable: true}
	broken := node("d", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	broken.Health = &health.Node{Node: "d", Judged: true, Cause: &health.Cause{Code: health.GPUsNotAdvertised, Operand: "device-plugin", Message: "0 of 8"},
		Hints: []signature.Hint{{Code: signature.NVMLNotFound, Pod: "p1"}, {Code: signature.NVMLNotFound, Pod: "p2"}, {Code: signature.DriverLibraryMismatch, Pod: "p3"}}}
	cpu := node("e", nil, []string{}, []string{}, nil)
	cpu.Health = &health.Node{Node: "e", Usable: true}
	e.Judged(verdict.Batch{Time: t0, Initial: true, Roster: roster, Rules: rules, Changes: []verdict.Change{{After: ready}, {After: broken}, {After: cpu}}})
	want := `
# HELP gpuops_node_usable 1 while the GPU node can run GPU work (gpuops health READY), 0 while it cannot; nodes without a GPU have no series.
# TYPE gpuops_node_usable gauge
gpuops_node_usable{node="a"} 1
gpuops_node_usable{node="d"} 0
# HELP gpuops_node_unusable_cause 1 for each root cause that makes a GPU node unusable: a code of gpuops health and the operand (empty for the node itself).
# TYPE gpuops_node_unusable_cause gauge
gpuops_node_unusable_cause{code="gpus-not-advertised",node="d",operand="device-plugin"} 1
# HELP gpuops_node_host_fault 1 for each host fault a failing container's log names on an unusable GPU node (serve --logs): a code of the catalog in docs/commands.md.
# TYPE gpuops_node_host_fault gauge
gpuops_node_host_fault{code="driver-library-mismatch",node="d"} 1
gpuops_node_host_fault{code="nvml-not-found",node="d"} 1
`
	if err := compare(t, e, want, "gpuops_node_usable", "gpuops_node_unusable_cause", "gpuops_node_host_fault"); err != nil {
		t.Error(err)
	}
}

// Each GPU node's pool is one series, (none) for a node without the label;
// a node without a GPU has none, nor a node judged without grouping.
func TestNodePool(t *testing.T) {
	e := metrics.New(synced)
	gpu := func(name, group string) *verdict.Verdict {
		v := node(name, all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
		v.Health = &health.Node{Node: name, Judged: true, Usable: true}
		v.Group = group
		return v
	}
	cpu := node("e", nil, []string{}, []string{}, nil)
	cpu.Health = &health.Node{Node: "e", Usable: true}
	cpu.Group = "(none)"
	e.Judged(verdict.Batch{Time: t0, Initial: true, Roster: roster, Rules: rules,
		Changes: []verdict.Change{{After: gpu("a", "A100")}, {After: gpu("b", "(none)")}, {After: gpu("c", "")}, {After: cpu}}})
	want := `
# HELP gpuops_node_pool 1 for each GPU node, with its pool: the node's value of the label serve groups by (--group-by), (none) without one.
# TYPE gpuops_node_pool gauge
gpuops_node_pool{node="a",pool="A100"} 1
gpuops_node_pool{node="b",pool="(none)"} 1
`
	if err := compare(t, e, want, "gpuops_node_pool"); err != nil {
		t.Error(err)
	}
}

// The rollout: a series per node in it with its verdict and state, when it
// entered the state, and per policy the counts by verdict (zeros too) and
// the budget. A node's verdict changing moves its one series.
func TestDriverUpgrade(t *testing.T) {
	e := metrics.New(synced)
	since := t0.Add(-time.Hour)
	a := node("a", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	a.Upgrade = &upgrade.Node{Node: "a", Verdict: upgrade.Done}
	b := node("b", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	b.Upgrade = &upgrade.Node{Node: "b", State: "upgrade-failed", Verdict: upgrade.Failed, Since: &since, Cause: "restarts"}
	ro := &upgrade.Rollout{Policy: &snapshot.UpgradePolicy{}, Budget: upgrade.Budget{Nodes: 2, MaxParallel: 1, MaxUnavailable: 1, InProgress: []string{"b"}},
		Nodes: []upgrade.Node{*a.Upgrade, *b.Upgrade}, Counts: map[string]int{upgrade.Done: 1, upgrade.Failed: 1}}
	e.Judged(verdict.Batch{Time: t0, Initial: true, Roster: roster, Rules: rules, Changes: []verdict.Change{{After: a}, {After: b}}, Rollout: ro})
	want := `
# HELP gpuops_driver_upgrade_node 1 for each node in the driver rollout: its verdict (done, in-progress, waiting, stuck, failed, skipped, left-cordoned, outdated) and its nvidia.com/gpu-driver-upgrade-state (empty without one).
# TYPE gpuops_driver_upgrade_node gauge
gpuops_driver_upgrade_node{node="a",state="",verdict="done"} 1
gpuops_driver_upgrade_node{node="b",state="upgrade-failed",verdict="failed"} 1
# HELP gpuops_driver_upgrade_state_since_timestamp_seconds When the node entered its driver upgrade state (the state label's last write), in Unix seconds.
# TYPE gpuops_driver_upgrade_state_since_timestamp_seconds gauge
gpuops_driver_upgrade_state_since_timestamp_seconds{node="b"} 1.6999964e+09
`
	if err := compare(t, e, want, "gpuops_driver_upgrade_node", "gpuops_driver_upgrade_state_since_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	counts := values(t, e, "gpuops_driver_upgrade_nodes", "gpuops_driver_upgrade_budget")
	for series, want := range map[string]float64{
		`gpuops_driver_upgrade_nodes{policy="ClusterPolicy",verdict="done"}`:          1,
		`gpuops_driver_upgrade_nodes{policy="ClusterPolicy",verdict="failed"}`:        1,
		`gpuops_driver_upgrade_nodes{policy="ClusterPolicy",verdict="waiting"}`:       0,
		`gpuops_driver_upgrade_budget{kind="max_unavailable",policy="ClusterPolicy"}`: 1,
		`gpuops_driver_upgrade_budget{kind="in_progress",policy="ClusterPolicy"}`:     1,
		`gpuops_driver_upgrade_budget{kind="available",policy="ClusterPolicy"}`:       0,
	} {
		if got, ok := counts[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if n := len(counts); n != len(upgrade.Verdicts)+5 {
		t.Errorf("%d rollout series, want %d", n, len(upgrade.Verdicts)+5)
	}

	// Without a ClusterPolicy (none read) the counts come under policy "none".
	e.Judged(verdict.Batch{Time: t0, Roster: roster, Rules: rules, Rollout: &upgrade.Rollout{Counts: map[string]int{upgrade.Waiting: 1}}})
	if err := compare(t, e, `
# HELP gpuops_driver_upgrade_nodes Nodes of the driver rollout by verdict, per upgrade policy (ClusterPolicy, NVIDIADriver/<name> for its pool, or none where no ClusterPolicy was read).
# TYPE gpuops_driver_upgrade_nodes gauge
gpuops_driver_upgrade_nodes{policy="none",verdict="done"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="failed"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="in-progress"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="left-cordoned"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="outdated"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="skipped"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="stuck"} 0
gpuops_driver_upgrade_nodes{policy="none",verdict="waiting"} 1
`, "gpuops_driver_upgrade_nodes"); err != nil {
		t.Error(err)
	}

	fixed := *b
	fixed.Upgrade = &upgrade.Node{Node: "b", State: "upgrade-done", Verdict: upgrade.Done}
	e.Judged(verdict.Batch{Time: t0.Add(time.Minute), Roster: roster, Rules: rules, Changes: []verdict.Change{{Before: b, After: &fixed}}, Rollout: ro})
	if n := len(scrape(t, e)["gpuops_driver_upgrade_node"].GetMetric()); n != 2 {
		t.Errorf("%d node series after b's change, want 2 (one a node)", n)
	}
}

func parse(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The ledger: a series per GPU node out of service with its actor, the
// count of every actor (zeros too), and the part of maxUnavailable each
// actor holds.
func TestOutOfService(t *testing.T) {
	e := metrics.New(synced)
	cordoned := node("c", all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
	cordoned.Health = &health.Node{Node: "c", Judged: true, Usable: true, OutOfService: &ledger.Entry{Actor: ledger.Person, Cordoned: true}}
	ours := node("q", all, []string{}, []string{}, []string{"device-plugin"})
	ours.Health = &health.Node{Node: "q", Judged: true, OutOfService: &ledger.Entry{Actor: ledger.Gpuops, Cordoned: true},
		Cause: &health.Cause{Code: "order", Operand: "device-plugin"}}
	ro := &upgrade.Rollout{Policy: &snapshot.UpgradePolicy{}, Budget: upgrade.Budget{Nodes: 4, MaxUnavailable: 1, Unavailable: []string{"c", "q", "n"}}}
	e.Judged(verdict.Batch{Time: t0, Initial: true, Roster: roster, Rules: rules, Changes: []verdict.Change{{After: cordoned}, {After: ours}}, Rollout: ro})
	want := `
# HELP gpuops_node_out_of_service 1 for each GPU node taken out of service (cordoned, or tainted against new work), by who took it out: upgrade-controller, driver-manager, nvsentinel, kured, gpuops, person or unknown.
# TYPE gpuops_node_out_of_service gauge
gpuops_node_out_of_service{actor="gpuops",node="q"} 1
gpuops_node_out_of_service{actor="person",node="c"} 1
`
	if err := compare(t, e, want, "gpuops_node_out_of_service"); err != nil {
		t.Error(err)
	}
	got := values(t, e, "gpuops_out_of_service_nodes", "gpuops_driver_upgrade_budget_used")
	for series, want := range map[string]float64{
		`gpuops_out_of_service_nodes{actor="person"}`:                               1,
		`gpuops_out_of_service_nodes{actor="gpuops"}`:                               1,
		`gpuops_out_of_service_nodes{actor="kured"}`:                                0,
		`gpuops_driver_upgrade_budget_used{actor="person",policy="ClusterPolicy"}`:  1,
		`gpuops_driver_upgrade_budget_used{actor="gpuops",policy="ClusterPolicy"}`:  1,
		`gpuops_driver_upgrade_budget_used{actor="unknown",policy="ClusterPolicy"}`: 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if n := len(got); n != 2*len(ledger.Actors) {
		t.Errorf("%d series, want %d (every actor, twice)", n, 2*len(ledger.Actors))
	}
	// Written from maps, the counts still come in one order: a scrape
	// reads as the one before when nothing changed.
	if a, b := exposition(t, e), exposition(t, e); a != b {
		t.Errorf("two scrapes of the same verdicts differ:\n%s\n%s", a, b)
	}
}
