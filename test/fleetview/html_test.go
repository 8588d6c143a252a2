package fleetview_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/summary"
)

// report --html writes one page of the fleet, and the page works.
func checkHTML(t *testing.T, env *testcluster.Env, sum summaryJSON, fleet []member) {
	file := filepath.Join(t.TempDir(), "fleet.html")
	r := gpuopstest.On(env).Run(t, "report", "--html", file, "-l", selector(env))
	kc, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	context := kc.Contexts[kc.CurrentContext]
	want := pageFacts{group: pools[1].label, source: []string{kc.CurrentContext, kc.Clusters[context.Cluster].Server, env.Namespace}}
	for _, m := range fleet {
		want.names = append(want.names, m.name)
	}
	for _, n := range sum.Nodes {
		want.findings += len(n.Findings)
		want.failing = append(want.failing, n.Name)
	}
	for _, g := range sum.Groups {
		if g.Name == want.group {
			want.inGroup = g.Nodes
		}
	}
	if out := fmt.Sprintf("wrote %s: %d nodes, %d findings\n", file, nodes, want.findings); r.Code != 1 || r.Stdout != out {
		t.Fatalf("report: exit %d, stdout %q, want exit 1 and %q\n%s", r.Code, r.Stdout, out, r.Stderr)
	}
	checkPage(t, file, "fleet", want)
}

// The page of a generated fleet (no cluster needed) works the same.
func TestReportPageInBrowser(t *testing.T) {
	f := fleettest.Fleet(t, 500)
	file := filepath.Join(t.TempDir(), "generated.html")
	writeReport(t, f, file)
	want := pageFacts{source: []string{"generated", "https://192.0.2.1:6443"}, findings: f.Findings(), group: f.Groups[1].Name, inGroup: f.Groups[1].Nodes}
	for _, n := range f.Nodes {
		want.names = append(want.names, n.Name)
		if len(n.Findings) > 0 {
			want.failing = append(want.failing, n.Name)
		}
	}
	checkPage(t, file, "generated", want)
}

// writeReport writes the HTML page of a generated fleet and returns its size.
func writeReport(tb testing.TB, f summary.Fleet, path string) int {
	tb.Helper()
	var page bytes.Buffer
	src := report.Source{Context: "generated", Server: "https://192.0.2.1:6443", Namespace: "gpu-operator", Taken: time.Now()}
	if err := report.HTML(&page, f, nil, src); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return page.Len()
}

// pageFacts is what a report page must show.
type pageFacts struct {
	source   []string // where the snapshot was taken: context, server, namespace
	names    []string // every node
	findings int
	failing  []string // nodes with findings
	group    string   // a group to filter on
	inGroup  int      // its nodes
}

// checkPage opens a report page in headless Chromium: it loads nothing
// else and logs no error, holds every node, lists the nodes with findings
// first in each group, and its filters show what they say. Screenshots of
// the findings and of the whole grid are saved as <name>-findings.png and
// <name>.png.
func checkPage(t *testing.T, file, name string, want pageFacts) {
	t.Helper()
	b := newBrowser(t)
	url := b.open(t, file)
	var rows int
	b.eval(t, `document.querySelectorAll("#grid tr.n").length`, &rows)
	if shown := b.visibleRows(t); rows != len(want.names) || !sameSet(shown, want.names) {
		t.Errorf("grid: %d rows, %d shown; want every node, %d", rows, len(shown), len(want.names))
	}
	var meta string
	b.eval(t, `document.querySelector(".meta").textContent`, &meta)
	for _, w := range want.source {
		if !strings.Contains(meta, w) {
			t.Errorf("the page does not say it was taken from %q:\n%s", w, meta)
		}
	}
	var verdict string
	b.eval(t, `document.getElementById("verdict").textContent`, &verdict)
	if w := fmt.Sprintf("%d findings on %d nodes", want.findings, len(want.failing)); !strings.Contains(verdict, w) {
		t.Errorf("verdict %q, want %q", verdict, w)
	}
	var findingsFirst bool
	b.eval(t, `Array.from(document.querySelectorAll("#grid section")).every(function (body) {
		var seenOK = false;
		return Array.from(body.querySelectorAll("tr.n")).every(function (r) {
			var f = r.classList.contains("f");
			if (!f) { seenOK = true; }
			return !(f && seenOK);
		});
	})`, &findingsFirst)
	if !findingsFirst {
		t.Error("a node with findings comes after a node without in its group")
	}

	b.run(t, chromedp.Click("#only", chromedp.ByQuery))
	if got := b.visibleRows(t); !sameSet(got, want.failing) {
		t.Errorf("only nodes with findings: %d rows shown, want %d", len(got), len(want.failing))
	}
	var count string
	b.eval(t, `document.getElementById("count").textContent`, &count)
	if w := fmt.Sprintf("%d of %d nodes shown", len(want.failing), len(want.names)); count != w {
		t.Errorf("count %q, want %q", count, w)
	}
	shot := b.screenshot(t, name+"-findings")

	// Typed into the name filter, a node's name shows the nodes whose
	// names contain it.
	text := want.failing[0]
	b.run(t, chromedp.Click("#only", chromedp.ByQuery), chromedp.SendKeys("#q", text, chromedp.ByQuery))
	var containing []string
	for _, n := range want.names {
		if strings.Contains(n, text) {
			containing = append(containing, n)
		}
	}
	if got := b.visibleRows(t); !sameSet(got, containing) {
		t.Errorf("filter %q: rows %q, want %q", text, got, containing)
	}
	b.filter(t, "q", "")
	b.filter(t, "g", want.group)
	if got := b.visibleRows(t); len(got) != want.inGroup || want.inGroup == 0 {
		t.Errorf("group %s: %d rows shown, want %d", want.group, len(got), want.inGroup)
	}
	b.filter(t, "g", "")
	if got := b.visibleRows(t); len(got) != len(want.names) {
		t.Errorf("no filter: %d rows shown, want %d", len(got), len(want.names))
	}
	full := b.screenshot(t, name)

	problems, requests := b.seen()
	if len(problems) > 0 {
		t.Errorf("the page logged problems:\n%s", strings.Join(problems, "\n"))
	}
	for _, u := range requests {
		if u != url {
			t.Errorf("the page fetched %s", u)
		}
	}
	t.Logf("page %s; screenshots %s, %s", file, shot, full)
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
