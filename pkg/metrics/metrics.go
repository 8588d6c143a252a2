// Package metrics exports the live verdict as Prometheus metrics. Series
// exist per finding (an operand missing on a node, a rule broken on a node),
// never per node × operand, so their number follows the trouble, not the
// fleet; the rest are counts per operand and per node state. The names are an
// API: docs/metrics.md lists them, and the shipped alerts use them.
package metrics

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Exporter is a prometheus.Collector of one live tracker's verdict.
type Exporter struct {
	synced func() map[string]bool

	mu         sync.Mutex
	verdicts   map[string]*verdict.Verdict
	roster     []operand.Operand
	rules      []operand.Rule
	lastChange time.Time
	rollout    *upgrade.Rollout // the last batch's, when the tracker judges upgrades

	duration    prometheus.Histogram
	watchErrors *prometheus.CounterVec
}

var (
	missingDesc = prometheus.NewDesc("gpuops_operand_missing",
		"1 while an operand that the node's deploy label asks for has no Running pod there.",
		[]string{"node", "operand"}, nil)
	stuckDesc = prometheus.NewDesc("gpuops_operand_stuck",
		"1 while a helper's pause of an operand on the node has lasted longer than --stuck-after (audit's STUCK).",
		[]string{"node", "operand"}, nil)
	usableDesc = prometheus.NewDesc("gpuops_node_usable",
		"1 while the GPU node can run GPU work (gpuops health READY), 0 while it cannot; nodes without a GPU have no series.",
		[]string{"node"}, nil)
	causeDesc = prometheus.NewDesc("gpuops_node_unusable_cause",
		"1 for each root cause that makes a GPU node unusable: a code of gpuops health and the operand (empty for the node itself).",
		[]string{"node", "code", "operand"}, nil)
	reasonDesc = prometheus.NewDesc("gpuops_operand_missing_reason",
		"1 for each reason why an operand is missing on a node (the codes of gpuops audit --explain).",
		[]string{"node", "operand", "reason"}, nil)
	violationDesc = prometheus.NewDesc("gpuops_order_violation",
		"1 while a node runs an operand without the one it needs (a rule of the start-up order is broken).",
		[]string{"node", "rule", "operand", "needs"}, nil)
	nodesDesc = prometheus.NewDesc("gpuops_nodes",
		"Nodes judged, by state: ok, or finding (an operand missing or stuck, or a rule broken).",
		[]string{"state"}, nil)
	desiredDesc = prometheus.NewDesc("gpuops_operand_desired_nodes",
		"Nodes whose deploy label asks for the operand (value exactly \"true\").",
		[]string{"operand"}, nil)
	runningDesc = prometheus.NewDesc("gpuops_operand_running_nodes",
		"Nodes with a Running pod of the operand.",
		[]string{"operand"}, nil)
	lastChangeDesc = prometheus.NewDesc("gpuops_last_change_timestamp_seconds",
		"When a finding last started or ended on any node (the first verdict counts), in Unix seconds.",
		nil, nil)
	upgradeDesc = prometheus.NewDesc("gpuops_driver_upgrade_node",
		"1 for each node in the driver rollout: its verdict (done, in-progress, waiting, stuck, failed, skipped, left-cordoned, outdated) and its nvidia.com/gpu-driver-upgrade-state (empty without one).",
		[]string{"node", "verdict", "state"}, nil)
	upgradeSinceDesc = prometheus.NewDesc("gpuops_driver_upgrade_state_since_timestamp_seconds",
		"When the node entered its driver upgrade state (the state label's last write), in Unix seconds.",
		[]string{"node"}, nil)
	upgradeNodesDesc = prometheus.NewDesc("gpuops_driver_upgrade_nodes",
		"Nodes of the driver rollout by verdict, per upgrade policy (ClusterPolicy, NVIDIADriver/<name> for its pool, or none where no ClusterPolicy was read).",
		[]string{"policy", "verdict"}, nil)
	upgradeBudgetDesc = prometheus.NewDesc("gpuops_driver_upgrade_budget",
		"The upgrade policy's budget as the controller counts it: max_parallel (maxParallelUpgrades, 0 for no limit), max_unavailable (resolved to nodes), available (upgrades it may start now), in_progress, unavailable (nodes using maxUnavailable).",
		[]string{"policy", "kind"}, nil)
	outOfServiceDesc = prometheus.NewDesc("gpuops_node_out_of_service",
		"1 for each GPU node taken out of service (cordoned, or tainted against new work), by who took it out: upgrade-controller, driver-manager, nvsentinel, kured, gpuops, person or unknown.",
		[]string{"node", "actor"}, nil)
	outOfServiceNodesDesc = prometheus.NewDesc("gpuops_out_of_service_nodes",
		"GPU nodes out of service, by who took them out (every actor, 0 for none).",
		[]string{"actor"}, nil)
	upgradeBudgetUsedDesc = prometheus.NewDesc("gpuops_driver_upgrade_budget_used",
		"Nodes of the upgrade policy's maxUnavailable each actor holds (the controller counts every cordoned or NotReady node against it; NotReady counts as unknown).",
		[]string{"policy", "actor"}, nil)
	syncedDesc = prometheus.NewDesc("gpuops_informer_synced",
		"1 once the watch of the resource has delivered its initial list.",
		[]string{"resource"}, nil)
)

// New makes an exporter of a live tracker's verdicts, fed by its hooks
// (Judged, WatchFailed); synced is the tracker's Synced.
func New(synced func() map[string]bool) *Exporter {
	e := &Exporter{
		synced:   synced,
		verdicts: map[string]*verdict.Verdict{},
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuops_judgement_duration_seconds",
			Help:    "Time to judge one batch of nodes: every node after the first sync, then the nodes each burst of events touched.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9), // 100µs to 6.5s
		}),
		watchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuops_watch_errors_total",
			Help: "Failed lists and watches, by resource; each is retried.",
		}, []string{"resource"}),
	}
	for r := range synced() {
		e.watchErrors.WithLabelValues(r) // a zero series, so rate() sees the first error
	}
	return e
}

// WatchFailed counts a failed list or watch.
func (e *Exporter) WatchFailed(resource string, _ error) {
	e.watchErrors.WithLabelValues(resource).Inc()
}

// Judged takes in a batch of the judge.
func (e *Exporter) Judged(b verdict.Batch) {
	e.duration.Observe(b.Took.Seconds())
	e.mu.Lock()
	defer e.mu.Unlock()
	e.roster = b.Roster
	e.rules = b.Rules
	e.rollout = b.Rollout
	changed := b.Initial
	for _, c := range b.Changes {
		if c.After == nil {
			delete(e.verdicts, c.Node())
		} else {
			e.verdicts[c.Node()] = c.After
		}
		changed = changed || !sameFindings(c.Before, c.After)
	}
	if changed {
		e.lastChange = b.Time
	}
}

// sameFindings reports whether two verdicts of a node have the same
// missing and stuck operands and broken rules (a node absent has none).
func sameFindings(a, b *verdict.Verdict) bool {
	var am, bm, as, bs, af, bf []string
	if a != nil {
		am, as, af = a.Audit.Missing, a.Audit.Stuck, a.Order.Findings
	}
	if b != nil {
		bm, bs, bf = b.Audit.Missing, b.Audit.Stuck, b.Order.Findings
	}
	return slices.Equal(am, bm) && slices.Equal(as, bs) && slices.Equal(af, bf) && causeOf(a) == causeOf(b)
}

// causeOf is a verdict's root cause of health, zero when usable or not judged.
func causeOf(v *verdict.Verdict) health.Cause {
	if v == nil || v.Health == nil || v.Health.Cause == nil {
		return health.Cause{}
	}
	c := *v.Health.Cause
	c.Message = "" // its text may change with time alone
	return c
}

// Describe sends the descriptors of every metric.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{missingDesc, stuckDesc, usableDesc, causeDesc, reasonDesc, violationDesc, nodesDesc, desiredDesc, runningDesc, lastChangeDesc, syncedDesc, upgradeDesc, upgradeSinceDesc, upgradeNodesDesc, upgradeBudgetDesc, outOfServiceDesc, outOfServiceNodesDesc, upgradeBudgetUsedDesc} {
		ch <- d
	}
	e.duration.Describe(ch)
	e.watchErrors.Describe(ch)
}

// Collect computes the metrics from the current verdicts.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for r, ok := range e.synced() {
		gauge(syncedDesc, bool01(ok), r)
	}
	e.duration.Collect(ch)
	e.watchErrors.Collect(ch)

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lastChange.IsZero() {
		return // no verdict yet: no counts rather than zeros that read as "all fine"
	}
	gauge(lastChangeDesc, float64(e.lastChange.UnixNano())/1e9)
	desired, running := map[string]int{}, map[string]int{}
	ok, finding := 0, 0
	ledgered := map[string]*ledger.Entry{}
	for _, v := range e.verdicts {
		for _, o := range v.Audit.Asked {
			desired[o]++
		}
		for _, o := range e.roster {
			if v.Row.Present[o.Column] {
				running[o.Name]++
			}
		}
		if h := v.Health; h != nil && h.Judged {
			gauge(usableDesc, bool01(h.Usable), v.Node)
			if e := h.OutOfService; e != nil {
				ledgered[v.Node] = e
				gauge(outOfServiceDesc, 1, v.Node, e.Actor)
			}
			if h.Cause != nil {
				for _, c := range append([]health.Cause{*h.Cause}, h.Also...) {
					gauge(causeDesc, 1, v.Node, c.Code, c.Operand)
				}
			}
		}
		if u := v.Upgrade; u != nil {
			gauge(upgradeDesc, 1, v.Node, u.Verdict, u.State)
			if u.Since != nil {
				gauge(upgradeSinceDesc, float64(u.Since.Unix()), v.Node)
			}
		}
		if v.OK() {
			ok++
			continue
		}
		finding++
		for _, o := range v.Audit.Missing {
			gauge(missingDesc, 1, v.Node, o)
		}
		for _, o := range v.Audit.Stuck {
			gauge(stuckDesc, 1, v.Node, o)
		}
		for _, m := range v.Explain.Missing {
			var seen []string
			for _, r := range m.Reasons {
				if !slices.Contains(seen, r.Code) {
					seen = append(seen, r.Code)
					gauge(reasonDesc, 1, v.Node, m.Operand, r.Code)
				}
			}
		}
		for _, f := range v.Order.Findings {
			r := verdict.RuleOf(e.rules, f)
			gauge(violationDesc, 1, v.Node, f, r.Operand, r.Needs)
		}
	}
	gauge(nodesDesc, float64(ok), "ok")
	gauge(nodesDesc, float64(finding), "finding")
	for _, o := range e.roster {
		gauge(desiredDesc, float64(desired[o.Name]), o.Name)
		gauge(runningDesc, float64(running[o.Name]), o.Name)
	}
	for actor, n := range ledger.Count(slices.Collect(maps.Values(ledgered))) {
		gauge(outOfServiceNodesDesc, float64(n), actor)
	}
	if r := e.rollout; r != nil {
		switch {
		case r.Policy != nil:
			rolloutGauges(gauge, "ClusterPolicy", r.Counts, r.Budget, ledgered)
		case len(r.Pools) == 0: // no policy read: the counts still say where the nodes are
			rolloutGauges(gauge, "none", r.Counts, r.Budget, ledgered)
		}
		for _, p := range r.Pools {
			rolloutGauges(gauge, "NVIDIADriver/"+p.Name, p.Counts, p.Budget, ledgered)
		}
	}
}

// rolloutGauges are one upgrade policy's counts by verdict (a zero for
// each verdict it has none of, so a count can be watched from 0), its
// budget and who uses maxUnavailable (the ledger's entries by node).
func rolloutGauges(gauge func(*prometheus.Desc, float64, ...string), policy string, counts map[string]int, b upgrade.Budget, ledgered map[string]*ledger.Entry) {
	for actor, n := range ledger.BudgetOf(b.MaxUnavailable, b.Unavailable, ledgered).ByActor {
		gauge(upgradeBudgetUsedDesc, float64(n), policy, actor)
	}
	for _, v := range upgrade.Verdicts {
		gauge(upgradeNodesDesc, float64(counts[v]), policy, v)
	}
	for kind, n := range map[string]int{"max_parallel": b.MaxParallel, "max_unavailable": b.MaxUnavailable, "available": b.Available,
		"in_progress": len(b.InProgress), "unavailable": len(b.Unavailable)} {
		gauge(upgradeBudgetDesc, float64(n), policy, kind)
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
