// Package metrics exports what the live tracker holds, each node's verdict
// (and with serve --workloads where the GPUs are and which GPU pods are
// blocked), as Prometheus metrics. Series
// exist per finding (an operand missing on a node, a rule broken on a node),
// never per node × operand, so their number follows the trouble, not the
// fleet; the rest are counts per operand and per node state. The names are an
// API: docs/metrics.md lists them, and the shipped alerts use them.
package metrics

import (
	"cmp"
	"io"
	"maps"
	"slices"
	"strings"
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

// Exporter exports one live tracker's verdicts: their families (a series or
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
	work       *live.Workloads  // the last judged, with serve --workloads
	order      []string         // the verdicts' nodes by name, for the scrape
	reorder    bool             // a node came or went since order was made

	scrape sync.Mutex               // one scrape at a time writes text
	text   *promtext.Table[*scrape] // its families and buffer
	nodes  []*verdict.Verdict       // its verdicts, in name order

	duration    prometheus.Histogram
	watchErrors *prometheus.CounterVec
}

// families are the verdicts' families, written as text (pkg/promtext)
// straight from the verdicts at each scrape, in this order: each declared
// once with its name, help, type, labels and the function that yields its
// samples, as kube-state-metrics declares its own.
var families = []promtext.Family[*scrape]{
	{Name: "gpuops_operand_missing", Type: promtext.Gauge,
		Help:    "1 while an operand that the node's deploy label asks for has no Running pod there.",
		Labels:  []string{"node", "operand"},
		Samples: findingOperands(func(v *verdict.Verdict) []string { return v.Audit.Missing })},
	{Name: "gpuops_operand_stuck", Type: promtext.Gauge,
		Help:    "1 while a helper's pause of an operand on the node has lasted longer than --stuck-after (audit's STUCK).",
		Labels:  []string{"node", "operand"},
		Samples: findingOperands(func(v *verdict.Verdict) []string { return v.Audit.Stuck })},
	{Name: "gpuops_node_usable", Type: promtext.Gauge,
		Help:   "1 while the GPU node can run GPU work (gpuops health READY), 0 while it cannot; nodes without a GPU have no series.",
		Labels: []string{"node"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.judged(func(v *verdict.Verdict, h *health.Node) { out.Sample(bool01(h.Usable), v.Node) })
		}},
	{Name: "gpuops_node_unusable_cause", Type: promtext.Gauge,
		Help:   "1 for each root cause that makes a GPU node unusable: a code of gpuops health and the operand (empty for the node itself).",
		Labels: []string{"code", "node", "operand"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.judged(func(v *verdict.Verdict, h *health.Node) {
				if h.Cause != nil {
					out.Sample(1, h.Cause.Code, v.Node, h.Cause.Operand)
					for _, c := range h.Also {
						out.Sample(1, c.Code, v.Node, c.Operand)
					}
				}
			})
		}},
	{Name: "gpuops_node_host_fault", Type: promtext.Gauge,
		Help:   "1 for each host fault a failing container's log names on an unusable GPU node (serve --logs): a code of the catalog in docs/commands.md.",
		Labels: []string{"code", "node"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.judged(func(v *verdict.Verdict, h *health.Node) {
				var seen []string // a fault two containers' logs name is one series
				for _, x := range h.Hints {
					if !slices.Contains(seen, x.Code) {
						seen = append(seen, x.Code)
						out.Sample(1, x.Code, v.Node)
					}
				}
			})
		}},
	{Name: "gpuops_operand_missing_reason", Type: promtext.Gauge,
		Help:   "1 for each reason why an operand is missing on a node (the codes of gpuops audit --explain).",
		Labels: []string{"node", "operand", "reason"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.findings(func(v *verdict.Verdict) {
				for _, m := range v.Why().Missing {
					var seen []string
					for _, r := range m.Reasons {
						if !slices.Contains(seen, r.Code) {
							seen = append(seen, r.Code)
							out.Sample(1, v.Node, m.Operand, r.Code)
						}
					}
				}
			})
		}},
	{Name: "gpuops_order_violation", Type: promtext.Gauge,
		Help:   "1 while a node runs an operand without the one it needs (a rule of the start-up order is broken).",
		Labels: []string{"needs", "node", "operand", "rule"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.findings(func(v *verdict.Verdict) {
				for _, f := range v.Order.Findings {
					r := operand.RuleOf(sc.rules, f)
					out.Sample(1, r.Needs, v.Node, r.Operand, f)
				}
			})
		}},
	{Name: "gpuops_nodes", Type: promtext.Gauge,
		Help:   "Nodes judged, by state: ok, or finding (an operand missing or stuck, or a rule broken).",
		Labels: []string{"state"},
		Samples: func(sc *scrape, out *promtext.Out) {
			// The counts in the order of their labels, as client_golang wrote them.
			out.Sample(float64(sc.finding), "finding")
			out.Sample(float64(sc.ok), "ok")
		}},
	{Name: "gpuops_operand_desired_nodes", Type: promtext.Gauge,
		Help:    "Nodes whose deploy label asks for the operand (value exactly \"true\").",
		Labels:  []string{"operand"},
		Samples: func(sc *scrape, out *promtext.Out) { sc.perOperand(out, sc.desired) }},
	{Name: "gpuops_operand_running_nodes", Type: promtext.Gauge,
		Help:    "Nodes with a Running pod of the operand.",
		Labels:  []string{"operand"},
		Samples: func(sc *scrape, out *promtext.Out) { sc.perOperand(out, sc.running) }},
	{Name: "gpuops_last_change_timestamp_seconds", Type: promtext.Gauge,
		Help: "When a finding last started or ended on any node (the first verdict counts), in Unix seconds.",
		Samples: func(sc *scrape, out *promtext.Out) {
			out.Sample(float64(sc.lastChange.UnixNano()) / 1e9)
		}},
	{Name: "gpuops_driver_upgrade_node", Type: promtext.Gauge,
		Help:   "1 for each node in the driver rollout: its verdict (done, in-progress, waiting, stuck, failed, skipped, left-cordoned, outdated) and its nvidia.com/gpu-driver-upgrade-state (empty without one).",
		Labels: []string{"node", "state", "verdict"},
		Samples: func(sc *scrape, out *promtext.Out) {
			for _, v := range sc.nodes {
				if u := v.Upgrade; u != nil {
					out.Sample(1, v.Node, u.State, u.Verdict)
				}
			}
		}},
	{Name: "gpuops_driver_upgrade_state_since_timestamp_seconds", Type: promtext.Gauge,
		Help:   "When the node entered its driver upgrade state (the state label's last write), in Unix seconds.",
		Labels: []string{"node"},
		Samples: func(sc *scrape, out *promtext.Out) {
			for _, v := range sc.nodes {
				if u := v.Upgrade; u != nil && u.Since != nil {
					out.Sample(float64(u.Since.Unix()), v.Node)
				}
			}
		}},
	{Name: "gpuops_driver_upgrade_nodes", Type: promtext.Gauge,
		Help:   "Nodes of the driver rollout by verdict, per upgrade policy (ClusterPolicy, NVIDIADriver/<name> for its pool, or none where no ClusterPolicy was read).",
		Labels: []string{"policy", "verdict"},
		Samples: func(sc *scrape, out *promtext.Out) {
			for _, p := range sc.policies {
				for _, v := range upgrade.Verdicts {
					out.Sample(float64(p.counts[v]), p.name, v)
				}
			}
		}},
	{Name: "gpuops_driver_upgrade_budget", Type: promtext.Gauge,
		Help:   "The upgrade policy's budget as the controller counts it: max_parallel (maxParallelUpgrades, 0 for no limit), max_unavailable (resolved to nodes), available (upgrades it may start now), in_progress, unavailable (nodes using maxUnavailable).",
		Labels: []string{"kind", "policy"},
		Samples: func(sc *scrape, out *promtext.Out) {
			for _, p := range sc.policies {
				// The kinds in the order of their names, as client_golang wrote them.
				b := p.budget
				out.Sample(float64(b.Available), "available", p.name)
				out.Sample(float64(len(b.InProgress)), "in_progress", p.name)
				out.Sample(float64(b.MaxParallel), "max_parallel", p.name)
				out.Sample(float64(b.MaxUnavailable), "max_unavailable", p.name)
				out.Sample(float64(len(b.Unavailable)), "unavailable", p.name)
			}
		}},
	{Name: "gpuops_node_out_of_service", Type: promtext.Gauge,
		Help:   "1 for each GPU node taken out of service (cordoned, or tainted against new work), by who took it out: upgrade-controller, driver-manager, nvsentinel, kured, gpuops, person or unknown.",
		Labels: []string{"actor", "node"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.judged(func(v *verdict.Verdict, h *health.Node) {
				if e := h.OutOfService; e != nil {
					out.Sample(1, e.Actor, v.Node)
				}
			})
		}},
	{Name: "gpuops_out_of_service_nodes", Type: promtext.Gauge,
		Help:   "GPU nodes out of service, by who took them out (every actor, 0 for none).",
		Labels: []string{"actor"},
		Samples: func(sc *scrape, out *promtext.Out) {
			byActor := ledger.Count(slices.Collect(maps.Values(sc.ledgered)))
			for _, actor := range slices.Sorted(maps.Keys(byActor)) {
				out.Sample(float64(byActor[actor]), actor)
			}
		}},
	{Name: "gpuops_driver_upgrade_budget_used", Type: promtext.Gauge,
		Help:   "Nodes of the upgrade policy's maxUnavailable each actor holds (the controller counts every cordoned or NotReady node against it; NotReady counts as unknown).",
		Labels: []string{"actor", "policy"},
		Samples: func(sc *scrape, out *promtext.Out) {
			for _, p := range sc.policies {
				used := ledger.BudgetOf(p.budget.MaxUnavailable, p.budget.Unavailable, sc.ledgered).ByActor
				for _, actor := range slices.Sorted(maps.Keys(used)) {
					out.Sample(float64(used[actor]), actor, p.name)
				}
			}
		}},
	{Name: "gpuops_node_pool", Type: promtext.Gauge,
		Help:   "1 for each GPU node, with its pool: the node's value of the label serve groups by (--group-by), (none) without one.",
		Labels: []string{"node", "pool"},
		Samples: func(sc *scrape, out *promtext.Out) {
			sc.judged(func(v *verdict.Verdict, _ *health.Node) {
				if v.Group != "" {
					out.Sample(1, v.Node, v.Group)
				}
			})
		}},

	// The workload side (serve --workloads), last: written only when
	// judged, so that without it the text is what it was.
	{Name: "gpuops_gpus", Type: promtext.Gauge,
		Help: "GPUs per pool and resource by state, as gpuops capacity counts them (serve --workloads): physical (GFD's count, per pool: resource empty), " +
			"allocatable, allocated, free, unhealthy (advertised − allocatable), stranded (free, on nodes that take no new GPU work).",
		Labels: []string{"pool", "resource", "state"},
		Samples: func(sc *scrape, out *promtext.Out) {
			if sc.work == nil {
				return
			}
			for _, p := range sc.work.Capacity.Pools {
				out.Sample(float64(p.Physical), p.Name, "", "physical")
				for _, r := range p.Resources {
					out.Sample(float64(r.Allocatable), p.Name, r.Resource, "allocatable")
					out.Sample(float64(r.Allocated), p.Name, r.Resource, "allocated")
					out.Sample(float64(r.Free), p.Name, r.Resource, "free")
					out.Sample(float64(r.StrandedTotal()), p.Name, r.Resource, "stranded")
					out.Sample(float64(r.Unhealthy), p.Name, r.Resource, "unhealthy")
				}
			}
		}},
	{Name: "gpuops_gpu_pods_blocked", Type: promtext.Gauge,
		Help:   "GPU pods stuck (not running as asked past --stuck-after), by namespace and the headline cause gpuops pods gives (serve --workloads); no series for none.",
		Labels: []string{"cause", "namespace"},
		Samples: func(sc *scrape, out *promtext.Out) {
			if sc.work == nil {
				return
			}
			type group struct{ namespace, cause string }
			n := map[group]int{}
			for _, a := range sc.work.Pods.Pods {
				if a.Finding() {
					ns, _, _ := strings.Cut(a.Pod, "/")
					n[group{ns, a.Code}]++
				}
			}
			for _, g := range slices.SortedFunc(maps.Keys(n), func(a, b group) int {
				return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.cause, b.cause))
			}) {
				out.Sample(float64(n[g]), g.cause, g.namespace)
			}
		}}}

var syncedDesc = prometheus.NewDesc("gpuops_informer_synced",
	"1 once the watch of the resource has delivered its initial list.",
	[]string{"resource"}, nil)

// New makes an exporter of a live tracker's verdicts, fed by its hooks
// (Judged, WatchFailed); synced is the tracker's Synced.
func New(synced func() map[live.Resource]bool) *Exporter {
	e := &Exporter{
		synced:   synced,
		verdicts: map[string]*verdict.Verdict{},
		text:     promtext.NewTable(families...),
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

// Workloads takes in the workload side, judged (serve --workloads).
func (e *Exporter) Workloads(w live.Workloads) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.work = &w
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
// client_golang: the watches' and the judge's, not the verdicts' families.
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

// WriteText writes the verdicts' families, nodes in name order, straight
// to w: the verdicts are taken under the lock (a slice of pointers; a
// verdict is not changed once judged) and written after it, so that a slow
// scraper never holds up the judge.
func (e *Exporter) WriteText(w io.Writer) error {
	e.scrape.Lock()
	defer e.scrape.Unlock()
	e.mu.Lock()
	if e.lastChange.IsZero() {
		e.mu.Unlock()
		return nil // nothing judged yet: no counts rather than zeros that read as "all fine"
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
	sc := newScrape(e.nodes, e.roster, e.rules, e.rollout, e.lastChange)
	sc.work = e.work
	e.mu.Unlock()
	err := e.text.Write(w, sc)
	clear(e.nodes) // held until the next scrape, they would keep verdicts judged again since
	return err
}

// scrape is what one scrape writes: the verdicts of the nodes in name
// order, the last batch's rules and when a finding last changed, and the
// counts over the nodes that several families read, made once.
type scrape struct {
	nodes      []*verdict.Verdict
	rules      []operand.Rule
	lastChange time.Time

	ok, finding      int
	operands         []string       // the roster's names, sorted
	desired, running map[string]int // nodes by operand
	ledgered         map[string]*ledger.Entry
	policies         []policy
	work             *live.Workloads
}

func newScrape(nodes []*verdict.Verdict, roster []operand.Operand, rules []operand.Rule, rollout *upgrade.Rollout, lastChange time.Time) *scrape {
	sc := &scrape{nodes: nodes, rules: rules, lastChange: lastChange, policies: policiesOf(rollout),
		desired: map[string]int{}, running: map[string]int{}, ledgered: map[string]*ledger.Entry{}}
	for _, v := range nodes {
		for _, o := range v.Audit.Asked {
			sc.desired[o]++
		}
		for _, o := range roster {
			if v.Row.Present.Has(o.Column) {
				sc.running[o.Name]++
			}
		}
		if h := v.Health; h != nil && h.Judged && h.OutOfService != nil {
			sc.ledgered[v.Node] = h.OutOfService
		}
		if v.OK() {
			sc.ok++
		} else {
			sc.finding++
		}
	}
	for _, o := range roster {
		sc.operands = append(sc.operands, o.Name)
	}
	slices.Sort(sc.operands)
	return sc
}

// findings calls each for the nodes with a finding, in name order.
func (sc *scrape) findings(each func(v *verdict.Verdict)) {
	for _, v := range sc.nodes {
		if !v.OK() {
			each(v)
		}
	}
}

// perOperand yields a count of nodes for each operand of the roster.
func (sc *scrape) perOperand(out *promtext.Out, nodes map[string]int) {
	for _, o := range sc.operands {
		out.Sample(float64(nodes[o]), o)
	}
}

// findingOperands yields a series for each operand of a node with a
// finding that of names.
func findingOperands(of func(v *verdict.Verdict) []string) func(*scrape, *promtext.Out) {
	return func(sc *scrape, out *promtext.Out) {
		sc.findings(func(v *verdict.Verdict) {
			for _, o := range of(v) {
				out.Sample(1, v.Node, o)
			}
		})
	}
}

// judged calls each for the nodes health judged (the GPU nodes), in name
// order.
func (sc *scrape) judged(each func(v *verdict.Verdict, h *health.Node)) {
	for _, v := range sc.nodes {
		if h := v.Health; h != nil && h.Judged {
			each(v, h)
		}
	}
}

// policy is one upgrade policy of the rollout: its counts by verdict and
// its budget.
type policy struct {
	name   string
	counts map[string]int
	budget upgrade.Budget
}

// policiesOf are the rollout's upgrade policies: the ClusterPolicy's, or
// none where no policy was read (the counts still say where the nodes
// are), then each NVIDIADriver's pool.
func policiesOf(r *upgrade.Rollout) []policy {
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
