package actor

import (
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuops/gpuops/pkg/promtext"
	"github.com/gpuops/gpuops/pkg/quarantine"
)

var (
	modeDesc = prometheus.NewDesc("gpuops_quarantine_mode",
		"1 for serve's --quarantine mode: dry-run or on (no series with off).", []string{"mode"}, nil)
	leaderDesc = prometheus.NewDesc("gpuops_quarantine_leader",
		"1 while this replica acts (it holds the Lease; always in dry-run), 0 while it only exports.", nil, nil)
	fuseDesc = prometheus.NewDesc("gpuops_quarantine_fuse_tripped",
		"1 while the quarantine's fuse is tripped: nothing is quarantined or released until gpuops quarantine reset.", nil, nil)
	maxDesc = prometheus.NewDesc("gpuops_quarantine_max",
		"How many nodes the quarantine may hold at once (--quarantine-max, or 10 % of the GPU nodes, at least 1).", nil, nil)
	uncertainDesc = prometheus.NewDesc("gpuops_quarantine_uncertain",
		"1 while the verdicts are uncertain (a watch not synced, a resource forbidden, a list or watch failed lately): nothing is done.", nil, nil)
	actionsDesc = prometheus.NewDesc("gpuops_quarantine_actions_total",
		"Actions done by this replica (dry-run: that would be), by kind: quarantine, release, forget (a stale record), trip.", []string{"action", "mode"}, nil)
)

// held is what the families of a series per node write: the actor's last
// decision while it leads (and has decided), none otherwise.
type held struct {
	mode string
	d    quarantine.Decision
}

// families are those of a series per node, written as text (WriteText):
// every unusable GPU node may be held, thousands of series at 5,000 nodes.
// Each is declared once with the function that yields its samples.
var families = []promtext.Family[held]{
	{Name: "gpuops_quarantined_node", Type: promtext.Gauge,
		Help:   "1 for each node gpuops's quarantine holds (on) or would hold (dry-run), as the acting replica sees it.",
		Labels: []string{"mode", "node"},
		Samples: func(h held, out *promtext.Out) {
			for _, n := range h.d.Owned {
				out.Sample(1, h.mode, n)
			}
		}},
	{Name: "gpuops_quarantine_held_node", Type: promtext.Gauge,
		Help:   "1 for each unusable GPU node the quarantine leaves in service, or of its own keeps, and why: held-by-other, in-driver-upgrade, not-yet, not-ready, rate, max, fuse-tripped, uncertain.",
		Labels: []string{"node", "reason"},
		Samples: func(h held, out *promtext.Out) {
			for _, x := range h.d.Held {
				out.Sample(1, x.Node, x.Reason)
			}
		}},
}

// Describe sends the descriptors of the actor's metrics but those it
// writes as text.
func (a *Actor) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{modeDesc, leaderDesc, fuseDesc, maxDesc, uncertainDesc, actionsDesc} {
		ch <- d
	}
}

// Collect sends the actor's metrics: those of its last decision only while
// it leads.
func (a *Actor) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	mode := a.opts.Mode
	gauge(modeDesc, 1, mode)
	gauge(leaderDesc, bool01(a.leading))
	for _, kind := range []string{"quarantine", "release", "forget", "trip"} {
		ch <- prometheus.MustNewConstMetric(actionsDesc, prometheus.CounterValue, a.counts[kind], kind, mode)
	}
	if !a.leading {
		return
	}
	gauge(fuseDesc, bool01(a.fuse.Tripped))
	if !a.judged {
		return
	}
	gauge(maxDesc, float64(a.last.Max))
	gauge(uncertainDesc, bool01(a.last.Uncertain != ""))
}

// WriteText writes the nodes the actor holds or would hold and those it
// leaves in service, as its last decision saw them (not an input made
// again over every node at each scrape), while it leads.
func (a *Actor) WriteText(w io.Writer) error {
	a.scrape.Lock()
	defer a.scrape.Unlock()
	a.mu.Lock()
	h := held{mode: a.opts.Mode}
	if a.leading && a.judged {
		h.d = a.last // a decision is made anew, never changed
	}
	a.mu.Unlock()
	return a.text.Write(w, h)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
