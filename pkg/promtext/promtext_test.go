package promtext_test

import (
	"errors"
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

// state is a scrape's state in these tests: each family's samples, as
// value and label values.
type state map[string][]sample

type sample struct {
	v      float64
	values []string
}

// family declares a family whose samples are the state's under its name.
func family(name, help string, typ promtext.Type, labels ...string) promtext.Family[state] {
	return promtext.Family[state]{Name: name, Help: help, Type: typ, Labels: labels,
		Samples: func(s state, out *promtext.Out) {
			for _, x := range s[name] {
				out.Sample(x.v, x.values...)
			}
		}}
}

// Families come out in their order, each under its HELP and TYPE, escaped
// as the format asks; a family without samples is left out; Prometheus'
// parser reads it back.
func TestWrite(t *testing.T) {
	table := promtext.NewTable(
		family("a_total_nodes", "Nodes\nby \\state.", promtext.Gauge, "state"),
		family("b_empty", "Never set.", promtext.Gauge),
		family("c_node", `1 for each "node".`, promtext.Gauge, "node", "why"),
		family("d_total", "Done.", promtext.Counter),
	)
	s := state{
		"a_total_nodes": {{3, []string{"ok"}}, {0.5, []string{"finding"}}},
		"c_node":        {{1, []string{"n1", `a "quoted"\ reason` + "\n"}}},
		"d_total":       {{7, nil}},
	}
	for round := range 2 { // a second scrape writes the same, not twice as much
		var b strings.Builder
		if err := table.Write(&b, s); err != nil {
			t.Fatal(err)
		}
		want := `# HELP a_total_nodes Nodes\nby \\state.
# TYPE a_total_nodes gauge
a_total_nodes{state="ok"} 3
a_total_nodes{state="finding"} 0.5
# HELP c_node 1 for each "node".
# TYPE c_node gauge
c_node{node="n1",why="a \"quoted\"\\ reason\n"} 1
# HELP d_total Done.
# TYPE d_total counter
d_total 7
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
	if got := strings.Join(table.Names(), " "); got != "a_total_nodes b_empty c_node d_total" {
		t.Errorf("names %q", got)
	}
}

// A scrape bigger than the buffer is written whole, in pieces, and the
// first error of its writes is Write's.
func TestWritesAsItGoes(t *testing.T) {
	table := promtext.NewTable(family("a_node", "h", promtext.Gauge, "node"))
	s := state{}
	for i := range 3000 {
		s["a_node"] = append(s["a_node"], sample{1, []string{strconv.Itoa(i)}})
	}
	var b chunks
	if err := table.Write(&b, s); err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 {
		t.Errorf("written in %d piece(s): the scrape is held whole", len(b))
	}
	all := strings.Join(b, "")
	if lines := strings.Count(all, "\n"); lines != 3002 || !strings.HasSuffix(all, `a_node{node="2999"} 1`+"\n") {
		t.Errorf("%d lines, ending %q", lines, all[len(all)-30:])
	}
	if err := table.Write(failing{}, s); err == nil || err.Error() != "gone" {
		t.Errorf("Write: %v, want the write's error", err)
	}
}

type chunks []string

func (c *chunks) Write(p []byte) (int, error) {
	*c = append(*c, string(p))
	return len(p), nil
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("gone") }

func TestSampleWantsEveryLabel(t *testing.T) {
	table := promtext.NewTable(family("x", "h", promtext.Gauge, "node", "why"))
	defer func() {
		if recover() == nil {
			t.Error("a series with a label value too many was written")
		}
	}()
	// One value too many: without the check it would be left out unseen.
	_ = table.Write(failing{}, state{"x": {{1, []string{"n1", "because", "extra"}}}})
}

func TestFamilyDeclaredWhole(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a family without a type was taken")
		}
	}()
	promtext.NewTable(promtext.Family[state]{Name: "x", Help: "h", Samples: func(state, *promtext.Out) {}})
}

// A value is written as client_golang's expfmt writes it, whole numbers
// (written without the float formatting) and the rest alike.
func TestValuesAsClientGolang(t *testing.T) {
	table := promtext.NewTable(family("g", "h", promtext.Gauge))
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1, 3, 5000, 999999, 1e6, -123456, 1764900000, 0.5, 2.5e-7, 1e21,
		math.NaN(), math.Inf(1), math.Inf(-1)} {
		var got strings.Builder
		if err := table.Write(&got, state{"g": {{v, nil}}}); err != nil {
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
