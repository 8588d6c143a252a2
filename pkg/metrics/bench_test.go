package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/metrics"
	"github.com/gpuops/gpuops/pkg/promtext"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// BenchmarkScrape: a scrape of 5,000 judged GPU nodes in a driver rollout
// (three series a node), written as text from the verdicts, against the
// same series as client_golang's const metrics behind promhttp (the way
// the verdict was exported before).
func BenchmarkScrape(b *testing.B) {
	e := fleet(5000)
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	text := promtext.Handler(reg, e)

	consts := prometheus.NewRegistry()
	consts.MustRegister(constCollector(scrape(b, e)))
	client := promhttp.HandlerFor(consts, promhttp.HandlerOpts{})

	for _, h := range []struct {
		name string
		http.Handler
	}{{"text", text}, {"client_golang", client}} {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				if rec.Code != 200 || rec.Body.Len() < 5000*3*40 {
					b.Fatalf("/metrics: %d, %d bytes", rec.Code, rec.Body.Len())
				}
			}
		})
	}
}

// fleet is an exporter of n judged GPU nodes in a driver rollout, each
// with three series.
func fleet(n int) *metrics.Exporter {
	e := metrics.New(synced)
	since := t0
	var changes []verdict.Change
	for i := range n {
		name := fmt.Sprintf("gpu-node-%04d", i)
		v := node(name, all, []string{}, []string{}, []string{"toolkit", "device-plugin"})
		v.Health = &health.Node{Node: name, Judged: true, Usable: true}
		v.Upgrade = &upgrade.Node{Node: name, Verdict: upgrade.Done, State: "upgrade-done", Since: &since}
		changes = append(changes, verdict.Change{After: v})
	}
	e.Judged(verdict.Batch{Time: time.Now(), Initial: true, Roster: roster, Rules: rules, Changes: changes,
		Rollout: &upgrade.Rollout{Counts: map[string]int{upgrade.Done: n}}})
	return e
}

// constCollector sends families as const metrics, made at each Collect.
type constCollector map[string]*dto.MetricFamily

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for name, f := range c {
		var labels []string
		for _, l := range f.Metric[0].Label {
			labels = append(labels, l.GetName())
		}
		desc := prometheus.NewDesc(name, f.GetHelp(), labels, nil)
		for _, m := range f.Metric {
			var values []string
			for _, l := range m.Label {
				values = append(values, l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, values...)
		}
	}
}
