package report_test

import (
	"io"
	"testing"
	"time"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/pkg/report"
)

// Writing the HTML page of 5,000 nodes against its baseline, the summary's
// text of the same fleet.
func BenchmarkHTML(b *testing.B) {
	f := fleettest.Fleet(b, 5000)
	b.Run("baseline-summary-text", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := (report.Printer{Format: report.Text}).Result(io.Discard, io.Discard, grouped(f), report.SummaryView); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("html", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := report.HTML(io.Discard, f, nil, report.Source{Taken: time.Now()}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
