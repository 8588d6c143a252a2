package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// The verdict's families are written here in Prometheus' text format, not
// through client_golang's const metrics: at 5,000 nodes those cost a scrape
// 196,000 allocations, 13 MB and 69 ms, the garbage of each scrape raising
// serve's heap between collections (BenchmarkScrape measures both ways).

// family is one of the verdict's metric families (families lists them).
type family int

// text is the verdict's series of one scrape, a buffer per family (the
// format wants a family's lines together), kept from scrape to scrape so
// that writing them allocates next to nothing.
type text [nFamilies][]byte

func (t *text) reset() {
	for f := range t {
		t[f] = t[f][:0]
	}
}

// gauge adds a series of family f: values are its label values, in the
// order of the family's label names.
func (t *text) gauge(f family, v float64, values ...string) {
	fam := &families[f]
	if len(values) != len(fam.labels) {
		panic(fmt.Sprintf("%s: %d label values for %d labels", fam.name, len(values), len(fam.labels)))
	}
	b := append(t[f], fam.name...)
	for i, name := range fam.labels {
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
	if len(fam.labels) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendValue(b, v)
	t[f] = append(b, '\n')
}

// writeTo writes each family that has series under its HELP and TYPE.
func (t *text) writeTo(w io.Writer) error {
	var head []byte
	for f := range t {
		if len(t[f]) == 0 {
			continue // as client_golang does: a family without series is left out
		}
		fam := &families[f]
		head = append(head[:0], "# HELP "...)
		head = append(head, fam.name...)
		head = append(head, ' ')
		head = appendEscaped(head, fam.help, false)
		head = append(head, "\n# TYPE "...)
		head = append(head, fam.name...)
		head = append(head, " gauge\n"...)
		if _, err := w.Write(head); err != nil {
			return err
		}
		if _, err := w.Write(t[f]); err != nil {
			return err
		}
	}
	return nil
}

// appendEscaped escapes as the text format asks: a backslash and a line
// feed in HELP, a double quote too in a label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
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

func appendValue(b []byte, v float64) []byte {
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

// Handler serves /metrics in Prometheus' text format (0.0.4, which every
// scraper reads): g's families (e's Collect among them, the process', the
// quarantine's), then the verdict's. One scrape writes at a time.
func (e *Exporter) Handler(g prometheus.Gatherer) http.Handler {
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
		e.scrape.Lock()
		defer e.scrape.Unlock()
		e.fill()
		_ = e.text.writeTo(w)
	})
}
