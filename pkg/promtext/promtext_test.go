package promtext_test

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuops/gpuops/pkg/promtext"
)

// Series of two families added in turns come out a family at a time, each
// under its HELP and TYPE, escaped as the format asks; a family without
// series is left out; Prometheus' parser reads it back.
func TestWriteTo(t *testing.T) {
	s := promtext.New(
		promtext.Family{Name: "a_total_nodes", Help: "Nodes\nby \\state.", Labels: []string{"state"}},
		promtext.Family{Name: "b_empty", Help: "Never set."},
		promtext.Family{Name: "c_node", Help: `1 for each "node".`, Labels: []string{"node", "why"}},
	)
	for round := range 2 { // a second scrape writes the same, not twice as much
		s.Reset()
		s.Gauge(0, 3, "ok")
		s.Gauge(2, 1, "n1", `a "quoted"\ reason`+"\n")
		s.Gauge(0, 0.5, "finding")
		var b strings.Builder
		if err := s.Write(&b); err != nil {
			t.Fatal(err)
		}
		want := `# HELP a_total_nodes Nodes\nby \\state.
# TYPE a_total_nodes gauge
a_total_nodes{state="ok"} 3
a_total_nodes{state="finding"} 0.5
# HELP c_node 1 for each "node".
# TYPE c_node gauge
c_node{node="n1",why="a \"quoted\"\\ reason\n"} 1
`
		if b.String() != want {
			t.Fatalf("round %d:\n%s\nwant:\n%s", round, b.String(), want)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if got := fams["c_node"].GetMetric()[0].GetLabel()[1].GetValue(); got != `a "quoted"\ reason`+"\n" {
			t.Errorf("label value read back as %q", got)
		}
	}
}

func TestGaugeWantsEveryLabel(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a series with a label value too many was written")
		}
	}()
	// One value too many: without the check it would be left out unseen.
	promtext.New(promtext.Family{Name: "x", Labels: []string{"node", "why"}}).Gauge(0, 1, "n1", "because", "extra")
}
