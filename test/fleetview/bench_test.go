package fleetview_test

import (
	"bytes"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuops/gpuops/internal/fleettest"
)

var fleetNodes = flag.Int("fleet-nodes", 5000, "nodes of the generated fleet of BenchmarkReportLoad")

// generatedPages writes the report of a generated fleet of n nodes and, as
// the baseline, the same grid as a bare table (no style, no script, no
// summary): what the browser pays for the data alone.
func generatedPages(b *testing.B, n int) (page, bare string) {
	b.Helper()
	f := fleettest.Fleet(b, n)
	dir := b.TempDir()
	page, bare = filepath.Join(dir, "fleet.html"), filepath.Join(dir, "bare.html")
	size := writeReport(b, f, page)
	var t bytes.Buffer
	t.WriteString("<!DOCTYPE html><meta charset=utf-8><title>bare</title><table id=grid>")
	for _, node := range f.Nodes {
		fmt.Fprintf(&t, "<tr class=n id=n-%s><th>%s", node.Name, html.EscapeString(node.Name))
		for _, c := range node.Cells {
			st, _ := c.Shown()
			fmt.Fprintf(&t, "<td>%d", st)
		}
		t.WriteString("</tr>")
	}
	t.WriteString("</table>")
	if err := os.WriteFile(bare, t.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes: report %d bytes, bare table %d bytes", n, size, t.Len())
	return page, bare
}

// BenchmarkReportLoad opens the report of a generated fleet (-fleet-nodes,
// default 5,000) in headless Chromium, against the bare table of the same
// grid in the same browser: load-ms is the end of the load event, frame-ms
// the first frame drawn after it (the page on screen, usable), both from the
// start of navigation. ns/op adds the DevTools round trips.
func BenchmarkReportLoad(b *testing.B) {
	page, bare := generatedPages(b, *fleetNodes)
	br := newBrowser(b)
	for _, tc := range []struct{ name, path string }{{"bare-table", bare}, {"report", page}} {
		b.Run(tc.name, func(b *testing.B) {
			url := br.open(b, tc.path)
			var rows int
			br.eval(b, `document.querySelectorAll("#grid tr.n").length`, &rows)
			if rows != *fleetNodes {
				b.Fatalf("%d rows, want %d", rows, *fleetNodes)
			}
			var load, frame float64
			n := 0
			for b.Loop() {
				l, f := br.loadTimes(b, url)
				load, frame, n = load+l, frame+f, n+1
			}
			b.ReportMetric(load/float64(n), "load-ms")
			b.ReportMetric(frame/float64(n), "frame-ms")
		})
	}
	if problems, _ := br.seen(); len(problems) > 0 {
		b.Errorf("the pages logged problems: %q", problems)
	}
}
