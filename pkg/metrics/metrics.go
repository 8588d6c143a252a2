// Package metrics exports the live verdict as Prometheus metrics. Series
// exist per finding (an operand missing on a node, a rule broken on a node),
// never per node × operand, so their number follows the trouble, not the
// fleet; the rest are counts per operand and per node state. The names are an
// API: docs/metrics.md lists them, and the shipped alerts use them.
package metrics

import (
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/promtext"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Exporter exports one live tracker's verdict: its families (a series or
// more per GPU node) as text written straight from the verdicts
// (WriteText), the watches' and the judge's metrics as a
// prometheus.Collector.
type Exporter struct {
	synced func() map[live.Resource]bool

	mu         sync.Mutex
	verdicts   map[string]*verdict.Verdict
	roster     []operand.Operand
	rules      []operand.Rule
	lastChange time.Time
	rollout    *upgrade.Rollout // the last batch's, when the tracker judges upgrades
	order      []string         // the verdicts' nodes by name, for the scrape
	reorder    bool             // a node came or went since order was made

	scrape sync.Mutex         // one scrape at a time writes text
	text   *promtext.Series   // its buffer
	nodes  []*verdict.Verdict // its verdicts, in name order

	duration    prometheus.Histogram
	watchErrors *prometheus.CounterVec
}

// The verdict's families, written as text (pkg/promtext) straight from the
// verdicts at each scrape.
const (
	missingFam = iota
	stuckFam
	usableFam
	causeFam
	reasonFam
	violationFam
	nodesFam
	desiredFam
	runningFam
	lastChangeFam
	upgradeFam
	upgradeSinceFam
	upgradeNodesFam
	upgradeBudgetFam
	outOfServiceFam
	outOfServiceNodesFam
	upgradeBudgetUsedFam
	hostFaultFam
	poolFam
)

var families = []promtext.Family{
	missingFam: {Name: "gpuops_operand_missing",
		Help:   "1 while an operand that the node's deploy label asks for has no Running pod there.",
		Labels: []string{"node", "operand"}},
	stuckFam: {Name: "gpuops_operand_stuck",
		Help:   "1 while a helper's pause of an operand on the node has lasted longer than --stuck-after (audit's STUCK).",
		Labels: []string{"node", "operand"}},
	usableFam: {Name: "gpuops_node_usable",
		Help:   "1 while the GPU node can run GPU work (gpuops health READY), 0 while it cannot; nodes without a GPU have no series.",
		Labels: []string{"node"}},
	causeFam: {Name: "gpuops_node_unusable_cause",
		Help:   "1 for each root cause that makes a GPU node unusable: a code of gpuops health and the operand (empty for the node itself).",
		Labels: []string{"code", "node", "operand"}},
	reasonFam: {Name: "gpuops_operand_missing_reason",
		Help:   "1 for each reason why an operand is missing on a node (the codes of gpuops audit --explain).",
		Labels: []string{"node", "operand", "reason"}},
	violationFam: {Name: "gpuops_order_violation",
		Help:   "1 while a node runs an operand without the one it needs (a rule of the start-up order is broken).",
		Labels: []string{"needs", "node", "operand", "rule"}},
	nodesFam: {Name: "gpuops_nodes",
		Help:   "Nodes judged, by state: ok, or finding (an operand missing or stuck, or a rule broken).",
		Labels: []string{"state"}},
	desiredFam: {Name: "gpuops_operand_desired_nodes",
		Help:   "Nodes whose deploy label asks for the operand (value exactly \"true\").",
		Labels: []string{"operand"}},
	runningFam: {Name: "gpuops_operand_running_nodes",
		Help:   "Nodes with a Running pod of the operand.",
		Labels: []string{"operand"}},
	lastChangeFam: {Name: "gpuops_last_change_timestamp_seconds",
		Help:   "When a finding last started or ended on any node (the first verdict counts), in Unix seconds.",
		Labels: nil},
	upgradeFam: {Name: "gpuops_driver_upgrade_node",
		Help:   "1 for each node in the driver rollout: its verdict (done, in-progress, waiting, stuck, failed, skipped, left-cordoned, outdated) and its nvidia.com/gpu-driver-upgrade-state (empty without one).",
		Labels: []string{"node", "state", "verdict"}},
	upgradeSinceFam: {Name: "gpuops_driver_upgrade_state_since_timestamp_seconds",
		Help:   "When the node entered its driver upgrade state (the state label's last write), in Unix seconds.",
		Labels: []string{"node"}},
	upgradeNodesFam: {Name: "gpuops_driver_upgrade_nodes",
		Help:   "Nodes of the driver rollout by verdict, per upgrade policy (ClusterPolicy, NVIDIADriver/<name> for its pool, or none where no ClusterPolicy was read).",
		Labels: []string{"policy", "verdict"}},
	upgradeBudgetFam: {Name: "gpuops_driver_upgrade_budget",
		Help:   "The upgrade policy's budget as the controller counts it: max_parallel (maxParallelUpgrades, 0 for no limit), max_unavailable (resolved to nodes), available (upgrades it may start now), in_progress, unavailable (nodes using maxUnavailable).",
		Labels: []string{"kind", "policy"}},
	outOfServiceFam: {Name: "gpuops_node_out_of_service",
		Help:   "1 for each GPU node taken out of service (cordoned, or tainted against new work), by who took it out: upgrade-controller, driver-manager, nvsentinel, kured, gpuops, person or unknown.",
		Labels: []string{"actor", "node"}},
	outOfServiceNodesFam: {Name: "gpuops_out_of_service_nodes",
		Help:   "GPU nodes out of service, by who took them out (every actor, 0 for none).",
		Labels: []string{"actor"}},
	upgradeBudgetUsedFam: {Name: "gpuops_driver_upgrade_budget_used",
		Help:   "Nodes of the upgrade policy's maxUnavailable each actor holds (the controller counts every cordoned or NotReady node against it; NotReady counts as unknown).",
		Labels: []string{"actor", "policy"}},
	hostFaultFam: {Name: "gpuops_node_host_fault",
		Help:   "1 for each host fault a failing container's log names on an unusable GPU node (serve --logs): a code of the catalog in docs/commands.md.",
		Labels: []string{"code", "node"}},
	poolFam: {Name: "gpuops_node_pool",
		Help:   "1 for each GPU node, with its pool: the node's value of the label serve groups by (--group-by), (none) without one.",
		Labels: []string{"node", "pool"}},
}

var syncedDesc = prometheus.NewDesc("gpuops_informer_synced",
	"1 once the watch of the resource has delivered its initial list.",
	[]string{"resource"}, nil)

// New makes an exporter of a live tracker's verdicts, fed by its hooks
// (Judged, WatchFailed); synced is the tracker's Synced.
func New(synced func() map[live.Resource]bool) *Exporter {
	e := &Exporter{
		synced:   synced,
		verdicts: map[string]*verdict.Verdict{},
		text:     promtext.New(families...),
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
		e.watchErrors.WithLabelValues(string(r)) // a zero series, so rate() sees the first error
	}
	return e
}

// WatchFailed counts a failed list or watch.
func (e *Exporter) WatchFailed(resource live.Resource, _ error) {
	e.watchErrors.WithLabelValues(string(resource)).Inc()
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
		_, had := e.verdicts[c.Node()]
		if c.After == nil {
			delete(e.verdicts, c.Node())
		} else {
			e.verdicts[c.Node()] = c.After
		}
		e.reorder = e.reorder || had != (c.After != nil)
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

// Describe sends the descriptors of the metrics that go through
// client_golang: the watches' and the judge's, not the verdict's families.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	ch <- syncedDesc
	e.duration.Describe(ch)
	e.watchErrors.Describe(ch)
}

// Collect sends the watches' and the judge's metrics.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	for r, ok := range e.synced() {
		ch <- prometheus.MustNewConstMetric(syncedDesc, prometheus.GaugeValue, bool01(ok), string(r))
	}
	e.duration.Collect(ch)
	e.watchErrors.Collect(ch)
}

// WriteText writes the verdict's families, nodes in name order, straight
// to w: the verdicts are taken under the lock (a slice of pointers; a
// verdict is not changed once judged) and written after it, so that a slow
// scraper never holds up the judge.
func (e *Exporter) WriteText(w io.Writer) error {
	e.scrape.Lock()
	defer e.scrape.Unlock()
	e.text.Begin(w)
	e.mu.Lock()
	if e.lastChange.IsZero() {
		e.mu.Unlock()
		return e.text.End() // no verdict yet: no counts rather than zeros that read as "all fine"
	}
	if e.reorder {
		e.order = slices.AppendSeq(e.order[:0], maps.Keys(e.verdicts))
		slices.Sort(e.order)
		e.reorder = false
	}
	e.nodes = e.nodes[:0]
	for _, name := range e.order {
		e.nodes = append(e.nodes, e.verdicts[name])
	}
	sc := scrape{nodes: e.nodes, roster: e.roster, rules: e.rules, rollout: e.rollout, lastChange: e.lastChange}
	e.mu.Unlock()
	sc.write(e.text)
	clear(e.nodes) // held until the next scrape, they would keep verdicts judged again since
	return e.text.End()
}

// scrape is what one scrape writes: the verdicts of the nodes in name
// order, and the last batch's roster, rules and rollout.
type scrape struct {
	nodes      []*verdict.Verdict
	roster     []operand.Operand
	rules      []operand.Rule
	rollout    *upgrade.Rollout
	lastChange time.Time
}

// write writes the families in their order, each over the nodes in turn:
// a family's lines come together, as the format wants.
func (sc scrape) write(t *promtext.Series) {
	desired, running := map[string]int{}, map[string]int{}
	ok, finding := 0, 0
	ledgered := map[string]*ledger.Entry{}
	for _, v := range sc.nodes {
		for _, o := range v.Audit.Asked {
			desired[o]++
		}
		for _, o := range sc.roster {
			if v.Row.Present.Has(o.Column) {
				running[o.Name]++
			}
		}
		if h := v.Health; h != nil && h.Judged && h.OutOfService != nil {
			ledgered[v.Node] = h.OutOfService
		}
		if v.OK() {
			ok++
		} else {
			finding++
		}
	}
	findings := func(each func(v *verdict.Verdict)) {
		for _, v := range sc.nodes {
			if !v.OK() {
				each(v)
			}
		}
	}
	judged := func(each func(v *verdict.Verdict, h *health.Node)) {
		for _, v := range sc.nodes {
			if h := v.Health; h != nil && h.Judged {
				each(v, h)
			}
		}
	}
	findings(func(v *verdict.Verdict) {
		for _, o := range v.Audit.Missing {
			t.Gauge(missingFam, 1, v.Node, o)
		}
	})
	findings(func(v *verdict.Verdict) {
		for _, o := range v.Audit.Stuck {
			t.Gauge(stuckFam, 1, v.Node, o)
		}
	})
	judged(func(v *verdict.Verdict, h *health.Node) { t.Gauge(usableFam, bool01(h.Usable), v.Node) })
	judged(func(v *verdict.Verdict, h *health.Node) {
		if h.Cause != nil {
			t.Gauge(causeFam, 1, h.Cause.Code, v.Node, h.Cause.Operand)
			for _, c := range h.Also {
				t.Gauge(causeFam, 1, c.Code, v.Node, c.Operand)
			}
		}
	})
	judged(func(v *verdict.Verdict, h *health.Node) {
		var seen []string // a fault two containers' logs name is one series
		for _, x := range h.Hints {
			if !slices.Contains(seen, x.Code) {
				seen = append(seen, x.Code)
				t.Gauge(hostFaultFam, 1, x.Code, v.Node)
			}
		}
	})
	findings(func(v *verdict.Verdict) {
		for _, m := range v.Why().Missing {
			var seen []string
			for _, r := range m.Reasons {
				if !slices.Contains(seen, r.Code) {
					seen = append(seen, r.Code)
					t.Gauge(reasonFam, 1, v.Node, m.Operand, r.Code)
				}
			}
		}
	})
	findings(func(v *verdict.Verdict) {
		for _, f := range v.Order.Findings {
			r := verdict.RuleOf(sc.rules, f)
			t.Gauge(violationFam, 1, r.Needs, v.Node, r.Operand, f)
		}
	})
	// The counts in the order of their labels, as client_golang wrote them.
	t.Gauge(nodesFam, float64(finding), "finding")
	t.Gauge(nodesFam, float64(ok), "ok")
	operands := make([]string, 0, len(sc.roster))
	for _, o := range sc.roster {
		operands = append(operands, o.Name)
	}
	slices.Sort(operands)
	for _, o := range operands {
		t.Gauge(desiredFam, float64(desired[o]), o)
	}
	for _, o := range operands {
		t.Gauge(runningFam, float64(running[o]), o)
	}
	t.Gauge(lastChangeFam, float64(sc.lastChange.UnixNano())/1e9)
	for _, v := range sc.nodes {
		if u := v.Upgrade; u != nil {
			t.Gauge(upgradeFam, 1, v.Node, u.State, u.Verdict)
		}
	}
	for _, v := range sc.nodes {
		if u := v.Upgrade; u != nil && u.Since != nil {
			t.Gauge(upgradeSinceFam, float64(u.Since.Unix()), v.Node)
		}
	}
	policies := sc.policies()
	for _, p := range policies {
		for _, v := range upgrade.Verdicts {
			t.Gauge(upgradeNodesFam, float64(p.counts[v]), p.name, v)
		}
	}
	for _, p := range policies {
		budget := map[string]int{"max_parallel": p.budget.MaxParallel, "max_unavailable": p.budget.MaxUnavailable,
			"available": p.budget.Available, "in_progress": len(p.budget.InProgress), "unavailable": len(p.budget.Unavailable)}
		for _, kind := range slices.Sorted(maps.Keys(budget)) {
			t.Gauge(upgradeBudgetFam, float64(budget[kind]), kind, p.name)
		}
	}
	judged(func(v *verdict.Verdict, h *health.Node) {
		if e := h.OutOfService; e != nil {
			t.Gauge(outOfServiceFam, 1, e.Actor, v.Node)
		}
	})
	byActor := ledger.Count(slices.Collect(maps.Values(ledgered)))
	for _, actor := range slices.Sorted(maps.Keys(byActor)) {
		t.Gauge(outOfServiceNodesFam, float64(byActor[actor]), actor)
	}
	for _, p := range policies {
		used := ledger.BudgetOf(p.budget.MaxUnavailable, p.budget.Unavailable, ledgered).ByActor
		for _, actor := range slices.Sorted(maps.Keys(used)) {
			t.Gauge(upgradeBudgetUsedFam, float64(used[actor]), actor, p.name)
		}
	}
	judged(func(v *verdict.Verdict, _ *health.Node) {
		if v.Group != "" {
			t.Gauge(poolFam, 1, v.Node, v.Group)
		}
	})
}

// policy is one upgrade policy of the rollout: its counts by verdict and
// its budget.
type policy struct {
	name   string
	counts map[string]int
	budget upgrade.Budget
}

// policies are the rollout's upgrade policies: the ClusterPolicy's, or
// none where no policy was read (the counts still say where the nodes
// are), then each NVIDIADriver's pool.
func (sc scrape) policies() []policy {
	r := sc.rollout
	if r == nil {
		return nil
	}
	var out []policy
	switch {
	case r.Policy != nil:
		out = append(out, policy{"ClusterPolicy", r.Counts, r.Budget})
	case len(r.Pools) == 0:
		out = append(out, policy{"none", r.Counts, r.Budget})
	}
	for _, p := range r.Pools {
		out = append(out, policy{"NVIDIADriver/" + p.Name, p.Counts, p.Budget})
	}
	return out
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
