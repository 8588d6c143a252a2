package gpuopstest

import (
	"slices"
	"testing"
)

// A series there at 0 is a series (HasSeries) but not a flag set (IsOne):
// the two questions a scraping test asks, kept apart.
func TestScrapeMeanings(t *testing.T) {
	m, err := ParseScrape(`# TYPE gpuops_node_usable gauge
gpuops_node_usable{node="a"} 1
gpuops_node_usable{node="b"} 0
# TYPE gpuops_watch_errors_total counter
gpuops_watch_errors_total{resource="pods"} 3
`)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := map[string]string{"node": "a"}, map[string]string{"node": "b"}, map[string]string{"node": "c"}
	if !m.HasSeries("gpuops_node_usable", b) || m.IsOne("gpuops_node_usable", b) {
		t.Error("b: a series at 0 is there, and not 1")
	}
	if !m.HasSeries("gpuops_node_usable", a) || !m.IsOne("gpuops_node_usable", a) {
		t.Error("a: a series at 1")
	}
	if m.HasSeries("gpuops_node_usable", c) || m.IsOne("gpuops_node_usable", c) {
		t.Error("c: no series")
	}
	if v, ok := m.Value("gpuops_watch_errors_total", map[string]string{"resource": "pods"}); !ok || v != 3 {
		t.Errorf("a counter's value %v %v", v, ok)
	}
	if got := m.LabelAtOne("gpuops_node_usable", "node"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("nodes at 1: %q", got)
	}
}
