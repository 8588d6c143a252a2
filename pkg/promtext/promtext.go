// Package promtext writes metric families in Prometheus' text format
// (0.0.4, which every scraper reads) straight from a program's own state.
// It is for families of a series or more per node: client_golang's const
// metrics, made again at each scrape, cost a scrape an allocation or more
// a series, which at 5,000 nodes is most of its time (BenchmarkScrape in
// pkg/metrics measures both ways).
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

// Family is a gauge family: its name, help, and label names in the order
// values are given and written (by name, as client_golang writes them, so
// that a series reads the same).
type Family struct {
	Name, Help string
	Labels     []string
}

// Writer is what writes families of its own at each scrape.
type Writer interface {
	WriteText(w io.Writer) error
}

// Series writes a scrape's series of some families straight to the scrape's
// writer, a family at a time under its HELP and TYPE, through a buffer of at
// most flushAt bytes kept from scrape to scrape: writing allocates next to
// nothing, and nothing of a scrape is held after it. A buffer of each family's
// lines, kept between scrapes, held a copy of the whole scrape in serve's heap
// (docs/scale.md, "`serve` all day"). Not safe for concurrent use.
type Series struct {
	families []Family
	w        io.Writer
	b        []byte
	open     int    // the family being written, -1 before the first
	begun    []bool // the families written this scrape
	err      error  // the scrape's first write error
}

// flushAt is how much of a scrape the buffer takes before it is written.
const flushAt = 32 << 10

// New makes the series of these families; Gauge names one by its index.
func New(families ...Family) *Series {
	return &Series{families: families, open: -1, begun: make([]bool, len(families))}
}

// Begin starts a scrape written to w.
func (s *Series) Begin(w io.Writer) {
	s.w, s.b, s.open, s.err = w, s.b[:0], -1, nil
	clear(s.begun)
}

// Gauge writes a series of family f: values are its label values, in the
// order of the family's label names. A family's series come together, as
// the format wants: one begun again after another family's panics.
func (s *Series) Gauge(f int, v float64, values ...string) {
	fam := &s.families[f]
	if len(values) != len(fam.Labels) {
		panic(fmt.Sprintf("%s: %d label values for %d labels", fam.Name, len(values), len(fam.Labels)))
	}
	b := s.b
	if f != s.open {
		if s.begun[f] {
			panic(fmt.Sprintf("%s: series after another family's", fam.Name))
		}
		s.begun[f], s.open = true, f
		b = append(b, "# HELP "...)
		b = append(b, fam.Name...)
		b = append(b, ' ')
		b = appendEscaped(b, fam.Help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, fam.Name...)
		b = append(b, " gauge\n"...)
	}
	b = append(b, fam.Name...)
	for i, name := range fam.Labels {
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
	if len(fam.Labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendValue(b, v)
	s.b = append(b, '\n')
	if len(s.b) >= flushAt {
		s.flush()
	}
}

// End writes what the buffer holds and returns the scrape's first write
// error. A family without series was not written at all, as client_golang
// leaves it out.
func (s *Series) End() error {
	s.flush()
	s.w = nil
	return s.err
}

func (s *Series) flush() {
	if s.err == nil && len(s.b) > 0 {
		_, s.err = s.w.Write(s.b)
	}
	s.b = s.b[:0]
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
