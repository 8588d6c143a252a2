// Package promtext writes metric families in Prometheus' text format
// (0.0.4, which every scraper reads) straight from a program's own state,
// each family declared once in a table with the function that yields its
// samples. It is for families of a series or more per node:
// client_golang's const metrics, made again at each scrape, cost a scrape
// an allocation or more a series, which at 5,000 nodes is most of its time
// (BenchmarkScrape in pkg/metrics measures both ways).
package promtext

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Type is a family's type, as its TYPE line names it.
type Type string

// The types the families written here have.
const (
	Gauge   Type = "gauge"
	Counter Type = "counter"
)

// Family is one metric family, declared once with everything about it, as
// kube-state-metrics declares each of its families with its generator
// (kubernetes/kube-state-metrics v2.20.0, pkg/metric_generator/generator.go,
// FamilyGenerator): its name, help, type, label names (in the order values
// are given and written: by name, as client_golang writes them, so that a
// series reads the same) and Samples, the function that yields its samples
// from a scrape's state S. Unlike ksm's, Samples writes each sample as it
// makes it instead of returning them: nothing of a scrape is built to be
// thrown away.
type Family[S any] struct {
	Name, Help string
	Type       Type
	Labels     []string
	Samples    func(s S, out *Out)
}

// Writer is what writes families of its own at each scrape.
type Writer interface {
	WriteText(w io.Writer) error
}

// Table writes a scrape of its families, one after the other in the order
// they were declared, each under its HELP and TYPE (a family without
// samples left out, as client_golang leaves it out), through a buffer of at
// most flushAt bytes kept from scrape to scrape: writing allocates next to
// nothing, and nothing of a scrape is held after it (a buffer of each
// family's lines, kept between scrapes, held a copy of the whole scrape in
// serve's heap: docs/scale.md, "`serve` all day"). Not safe for concurrent
// use.
type Table[S any] struct {
	families []Family[S]
	out      Out
}

// NewTable makes the table of these families; one without a name, type or
// Samples is a mistake of the program, and panics.
func NewTable[S any](families ...Family[S]) *Table[S] {
	for _, f := range families {
		if f.Name == "" || f.Type == "" || f.Samples == nil {
			panic(fmt.Sprintf("promtext: family %q declared without a name, type or Samples", f.Name))
		}
	}
	return &Table[S]{families: families}
}

// Names are the families' names, in their order.
func (t *Table[S]) Names() []string {
	names := make([]string, len(t.families))
	for i, f := range t.families {
		names[i] = f.Name
	}
	return names
}

// Write writes every family's samples of s to w and returns the first
// write error.
func (t *Table[S]) Write(w io.Writer, s S) error {
	o := &t.out
	o.w, o.b, o.err = w, o.b[:0], nil
	for i := range t.families {
		f := &t.families[i]
		o.name, o.help, o.typ, o.labels, o.opened = f.Name, f.Help, f.Type, f.Labels, false
		f.Samples(s, o)
	}
	o.flush()
	o.w = nil
	return o.err
}

// Out takes the samples of the family being written.
type Out struct {
	name, help string
	typ        Type
	labels     []string
	opened     bool // the family's HELP and TYPE are written

	w   io.Writer
	b   []byte
	err error // the scrape's first write error
}

// flushAt is how much of a scrape the buffer takes before it is written.
const flushAt = 32 << 10

// Sample writes a sample of the family: values are its label values, in
// the order of the family's label names.
func (o *Out) Sample(v float64, values ...string) {
	if len(values) != len(o.labels) {
		panic(fmt.Sprintf("%s: %d label values for %d labels", o.name, len(values), len(o.labels)))
	}
	b := o.b
	if !o.opened {
		o.opened = true
		b = append(b, "# HELP "...)
		b = append(b, o.name...)
		b = append(b, ' ')
		b = appendEscaped(b, o.help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, o.name...)
		b = append(b, ' ')
		b = append(b, o.typ...)
		b = append(b, '\n')
	}
	b = append(b, o.name...)
	for i, name := range o.labels {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, name...)
		b = append(b, `="`...)
		b = appendEscaped(b, values[i], true)
		b = append(b, '"')
	}
	if len(o.labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendValue(b, v)
	o.b = append(b, '\n')
	if len(o.b) >= flushAt {
		o.flush()
	}
}

func (o *Out) flush() {
	if o.err == nil && len(o.b) > 0 {
		_, o.err = o.w.Write(o.b)
	}
	o.b = o.b[:0]
}

// appendEscaped escapes as the text format asks: a backslash and a line
// feed in HELP, a double quote too in a label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !needsEscape(s) {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// needsEscape reports whether s has a byte the format escapes. A loop of
// its own: strings.ContainsAny builds its set at each call, a large share
// of a scrape's CPU when every label value passes through it.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '\n' || c == '"' {
			return true
		}
	}
	return false
}

// appendValue writes v as client_golang does (strconv's shortest 'g'). A
// whole number under a million, most series' 0 or 1, reads the same in
// decimal and is written so, without the float formatting (-0 as 0, as
// client_golang writes it).
func appendValue(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e6 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// Handler serves /metrics: g's families (client_golang's: the process', a
// histogram), then each writer's, in the text format.
func Handler(g prometheus.Gatherer, writers ...Writer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mfs, err := g.Gather()
		if err != nil {
			http.Error(w, "gathering metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return // the scraper went away
			}
		}
		for _, tw := range writers {
			if tw.WriteText(w) != nil {
				return
			}
		}
	})
}
