// Package promtext writes metric families in Prometheus' text format
// (0.0.4, which every scraper reads) straight from a program's own state.
// It is for families of a series or more per node: client_golang's const
// metrics, made again at each scrape, cost a scrape at 5,000 nodes 196,000
// allocations, 13 MB and 69 ms (BenchmarkScrape in pkg/metrics measures
// both ways).
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

// Series are a scrape's series of some families, a buffer per family (the
// format wants a family's lines together), kept from scrape to scrape so
// that writing them allocates next to nothing. Not safe for concurrent use.
type Series struct {
	families []Family
	lines    [][]byte
}

// New makes the series of these families; Gauge names one by its index.
func New(families ...Family) *Series {
	return &Series{families: families, lines: make([][]byte, len(families))}
}

// Reset forgets the series, keeping the buffers.
func (s *Series) Reset() {
	for i := range s.lines {
		s.lines[i] = s.lines[i][:0]
	}
}

// Gauge adds a series of family f: values are its label values, in the
// order of the family's label names.
func (s *Series) Gauge(f int, v float64, values ...string) {
	fam := &s.families[f]
	if len(values) != len(fam.Labels) {
		panic(fmt.Sprintf("%s: %d label values for %d labels", fam.Name, len(values), len(fam.Labels)))
	}
	b := append(s.lines[f], fam.Name...)
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
	s.lines[f] = append(b, '\n')
}

// Write writes each family that has series under its HELP and TYPE.
func (s *Series) Write(w io.Writer) error {
	var head []byte
	for f, lines := range s.lines {
		if len(lines) == 0 {
			continue // as client_golang does: a family without series is left out
		}
		fam := &s.families[f]
		head = append(head[:0], "# HELP "...)
		head = append(head, fam.Name...)
		head = append(head, ' ')
		head = appendEscaped(head, fam.Help, false)
		head = append(head, "\n# TYPE "...)
		head = append(head, fam.Name...)
		head = append(head, " gauge\n"...)
		if _, err := w.Write(head); err != nil {
			return err
		}
		if _, err := w.Write(lines); err != nil {
			return err
		}
	}
	return nil
}

// Names are the families' names.
func (s *Series) Names() []string {
	var names []string
	for _, f := range s.families {
		names = append(names, f.Name)
	}
	return names
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
// its own: strings.ContainsAny builds its set at each call, and was a
// quarter of a scrape's CPU at 5,000 nodes (a profile of bench:serve).
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
