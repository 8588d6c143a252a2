package fleetview_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gpuops/gpuops/internal/testcluster"
)

// report --html writes one page; opened in headless Chromium it loads
// nothing else and logs no error, holds every node, lists the nodes with
// findings first, and its filters show what they say.
func checkHTML(t *testing.T, env *testcluster.Env, sum summaryJSON) {
	file := filepath.Join(t.TempDir(), "fleet.html")
	r := gpuops(t, env, "report", "--html", file, "-l", selector(env))
	findings := 0
	for _, n := range sum.Nodes {
		findings += len(n.Findings)
	}
	if want := fmt.Sprintf("wrote %s: %d nodes, %d findings\n", file, nodes, findings); r.Code != 1 || r.Stdout != want {
		t.Fatalf("report: exit %d, stdout %q, want exit 1 and %q\n%s", r.Code, r.Stdout, want, r.Stderr)
	}

	b := newBrowser(t)
	url := b.open(t, file)
	var rows int
	b.eval(t, `document.querySelectorAll("#grid tr.n").length`, &rows)
	if rows != nodes || len(b.visibleRows(t)) != nodes {
		t.Errorf("grid: %d rows, %d visible; want %d", rows, len(b.visibleRows(t)), nodes)
	}
	var verdict string
	b.eval(t, `document.getElementById("verdict").textContent`, &verdict)
	if want := fmt.Sprintf("%d findings on %d nodes", findings, len(sum.Nodes)); !strings.Contains(verdict, want) {
		t.Errorf("verdict %q, want %q", verdict, want)
	}
	var findingsFirst bool
	b.eval(t, `Array.from(document.querySelectorAll("#grid tbody")).every(function (body) {
		var rows = Array.from(body.querySelectorAll("tr.n")), seenOK = false;
		return rows.every(function (r) { var f = r.classList.contains("f"); if (!f) { seenOK = true; } return !(f && seenOK); });
	})`, &findingsFirst)
	if !findingsFirst {
		t.Error("a node with findings comes after a node without in its group")
	}

	var failing []string
	for _, n := range sum.Nodes {
		failing = append(failing, n.Name)
	}
	b.run(t, chromedp.Click("#only", chromedp.ByQuery))
	got := b.visibleRows(t)
	if !sameSet(got, failing) {
		t.Errorf("only nodes with findings: %d rows shown, want the summary's %d", len(got), len(failing))
	}
	var count string
	b.eval(t, `document.getElementById("count").textContent`, &count)
	if want := fmt.Sprintf("%d of %d nodes shown", len(failing), nodes); count != want {
		t.Errorf("count %q, want %q", count, want)
	}
	shot := b.screenshot(t, "findings")

	b.run(t, chromedp.Click("#only", chromedp.ByQuery), chromedp.SendKeys("#q", failing[0], chromedp.ByQuery))
	if got := b.visibleRows(t); !slices.Equal(got, failing[:1]) {
		t.Errorf("filter %q: rows %q", failing[0], got)
	}
	b.run(t, chromedp.SetValue("#q", "", chromedp.ByQuery), chromedp.SetValue("#g", pools[1].label, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById("g").dispatchEvent(new Event("change"))`, nil))
	inPool := 0
	for _, g := range sum.Groups {
		if g.Name == pools[1].label {
			inPool = g.Nodes
		}
	}
	if got := b.visibleRows(t); len(got) != inPool || inPool == 0 {
		t.Errorf("group %s: %d rows shown, want %d", pools[1].label, len(got), inPool)
	}
	b.run(t, chromedp.SetValue("#g", "", chromedp.ByQuery), chromedp.Evaluate(`document.getElementById("g").dispatchEvent(new Event("change"))`, nil))
	full := b.screenshot(t, "fleet")

	problems, requests := b.seen()
	if len(problems) > 0 {
		t.Errorf("the page logged problems:\n%s", strings.Join(problems, "\n"))
	}
	for _, u := range requests {
		if u != url {
			t.Errorf("the page fetched %s", u)
		}
	}
	t.Logf("report: %s; screenshots %s, %s", file, shot, full)
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
