package metrics_test

import (
	"cmp"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/metrics"
	"github.com/gpuops/gpuops/pkg/promtext"
)

// exposition is the exporter's /metrics, its Collect gathered by a
// registry that checks names, help and label consistency.
func exposition(t testing.TB, e *metrics.Exporter) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e)
	rec := httptest.NewRecorder()
	promtext.Handler(reg, e).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	together(t, rec.Body.String())
	return rec.Body.String()
}

// together fails unless each family's series follow its TYPE line, all
// of them, as the text format asks (Prometheus' parser does not check).
func together(t testing.TB, s string) {
	t.Helper()
	seen, current := map[string]bool{}, ""
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			current, _, _ = strings.Cut(name, " ")
			if seen[current] {
				t.Fatalf("%s typed twice in\n%s", current, s)
			}
			seen[current] = true
		} else if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, current) {
			t.Fatalf("%q apart from its family, under %s", line, current)
		}
	}
}

// scrape reads the exporter's /metrics as the test kit reads serve's.
func scrape(t testing.TB, e *metrics.Exporter) gpuopstest.Scrape {
	t.Helper()
	return parseText(t, exposition(t, e))
}

func parseText(t testing.TB, s string) gpuopstest.Scrape {
	t.Helper()
	families, err := gpuopstest.ParseScrape(s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return families
}

// compare is whether the named families of the exporter's /metrics are
// those of want, in any order of series.
func compare(t *testing.T, e *metrics.Exporter, want string, names ...string) error {
	t.Helper()
	got, wanted := scrape(t, e), parseText(t, want)
	var errs []error
	for _, name := range names {
		if g, w := normal(got[name]), normal(wanted[name]); g != w {
			errs = append(errs, fmt.Errorf("%s:\ngot:\n%swant:\n%s", name, g, w))
		}
	}
	return errors.Join(errs...)
}

// normal is a family as text, its series in the order of their labels.
func normal(f *dto.MetricFamily) string {
	if f == nil {
		return ""
	}
	key := func(m *dto.Metric) string {
		slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
		var k strings.Builder
		for _, l := range m.Label {
			k.WriteString(l.GetName() + "=" + l.GetValue() + ",")
		}
		return k.String()
	}
	slices.SortFunc(f.Metric, func(a, b *dto.Metric) int { return cmp.Compare(key(a), key(b)) })
	var s strings.Builder
	if _, err := expfmt.MetricFamilyToText(&s, f); err != nil {
		return err.Error()
	}
	return s.String()
}

// values are the named families' series (as written) and their values.
func values(t *testing.T, e *metrics.Exporter, names ...string) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, line := range strings.Split(exposition(t, e), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		if name, _, _ := strings.Cut(f[0], "{"); slices.Contains(names, name) {
			got[f[0]] = parse(t, f[1])
		}
	}
	return got
}

// A scrape is written as it goes and nothing of it stays: serve holds its
// exporter for as long as it runs, and the text of 5,000 nodes kept from
// scrape to scrape was most of the exporter's heap.
func TestScrapeHoldsNoText(t *testing.T) {
	e := fleet(5000)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var n countingWriter
	if err := e.WriteText(&n); err != nil {
		t.Fatal(err)
	}
	held := int64(heap()) - int64(before)
	if n < 5000*3*40 {
		t.Fatalf("the scrape wrote %d bytes", n)
	}
	if held > int64(n)/4 { // the nodes in name order, their verdicts (120 KB), the buffer
		t.Errorf("the exporter holds %d bytes more after writing %d", held, n)
	}
	runtime.KeepAlive(e)
}

type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
