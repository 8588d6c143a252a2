package promtext_test

import (
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"

	"github.com/gpuops/gpuops/pkg/promtext"
)

// Series of two families come out a family at a time, each under its HELP
// and TYPE, escaped as the format asks; a family without series is left
// out; Prometheus' parser reads it back.
func TestWriteTo(t *testing.T) {
	s := promtext.New(
		promtext.Family{Name: "a_total_nodes", Help: "Nodes\nby \\state.", Labels: []string{"state"}},
		promtext.Family{Name: "b_empty", Help: "Never set."},
		promtext.Family{Name: "c_node", Help: `1 for each "node".`, Labels: []string{"node", "why"}},
	)
	for round := range 2 { // a second scrape writes the same, not twice as much
		var b strings.Builder
		s.Begin(&b)
		s.Gauge(0, 3, "ok")
		s.Gauge(0, 0.5, "finding")
		s.Gauge(2, 1, "n1", `a "quoted"\ reason`+"\n")
		if err := s.End(); err != nil {
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

// A scrape bigger than the buffer is written whole, in pieces, and the
// first error of its writes is End's.
func TestWritesAsItGoes(t *testing.T) {
	s := promtext.New(promtext.Family{Name: "a_node", Help: "h", Labels: []string{"node"}})
	var b strings.Builder
	s.Begin(&b)
	for i := range 3000 {
		s.Gauge(0, 1, strconv.Itoa(i))
	}
	if b.Len() == 0 {
		t.Error("nothing written before End: the scrape is held whole")
	}
	if err := s.End(); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != 3002 || !strings.HasSuffix(b.String(), `a_node{node="2999"} 1`+"\n") {
		t.Errorf("%d lines, ending %q", lines, b.String()[b.Len()-30:])
	}
	s.Begin(failing{})
	for i := range 3000 {
		s.Gauge(0, 1, strconv.Itoa(i))
	}
	if err := s.End(); err == nil || err.Error() != "gone" {
		t.Errorf("End: %v, want the write's error", err)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("gone") }

// A family begun again after another's would be written twice, which
// scrapers reject: Gauge refuses it.
func TestFamilyComesTogether(t *testing.T) {
	s := promtext.New(promtext.Family{Name: "a", Help: "h"}, promtext.Family{Name: "b", Help: "h"})
	s.Begin(io.Discard)
	s.Gauge(0, 1)
	s.Gauge(1, 1)
	defer func() {
		if recover() == nil {
			t.Error("family a begun twice in one scrape")
		}
	}()
	s.Gauge(0, 2)
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

// A value is written as client_golang's expfmt writes it, whole numbers
// (written without the float formatting) and the rest alike.
func TestValuesAsClientGolang(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 3, 5000, 999999, 1e6, -123456, 1764900000, 0.5, 2.5e-7, 1e21,
		math.NaN(), math.Inf(1), math.Inf(-1)} {
		s := promtext.New(promtext.Family{Name: "g", Help: "h"})
		var got strings.Builder
		s.Begin(&got)
		s.Gauge(0, v)
		if err := s.End(); err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		if _, err := expfmt.MetricFamilyToText(&want, &dto.MetricFamily{Name: proto.String("g"), Help: proto.String("h"),
			Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(v)}}}}); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%v: wrote\n%s\nclient_golang writes\n%s", v, got.String(), want.String())
		}
	}
}
