package fleetview_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumInstall says how to get the browser the page is checked in.
const chromiumInstall = "apt-get install -y chromium (Debian's package; go tool task deps installs it)"

// chromium finds a Chromium or Chrome binary, or fails the test saying how
// to install one: a page nobody opened is not a checked page.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found on PATH: the HTML report is checked in a real browser; install it: %s", chromiumInstall)
	return ""
}

// browser is one headless Chromium tab and what the page did in it: every
// console error, uncaught exception and browser log error (a blocked fetch
// is one), and every URL it requested.
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string
	requests []string
}

// newBrowser starts headless Chromium for the test; it is stopped when the
// test ends.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests often run as root, where Chromium's sandbox refuses to start
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-gpu", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning || ev.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError || ev.Entry.Level == log.LevelWarning {
				b.problems = append(b.problems, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			b.requests = append(b.requests, ev.Request.URL)
		}
	})
	if err := chromedp.Run(ctx, network.Enable(), log.Enable(), runtime.Enable()); err != nil {
		t.Fatalf("start Chromium: %v (is it installed? %s)", err, chromiumInstall)
	}
	return b
}

// run runs browser actions, bounded in time.
func (b *browser) run(t testing.TB, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// open loads a file and waits until the page has loaded.
func (b *browser) open(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + abs
	b.run(t, chromedp.Navigate(url), chromedp.WaitReady("#grid", chromedp.ByQuery))
	return url
}

// eval evaluates a JavaScript expression in the page into out.
func (b *browser) eval(t testing.TB, expr string, out any) {
	t.Helper()
	b.run(t, chromedp.Evaluate(expr, out))
}

// seen returns the problems and requests so far.
func (b *browser) seen() (problems, requests []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...), append([]string(nil), b.requests...)
}

// loadTimes loads a page afresh and returns, in milliseconds from the start
// of navigation, when its load event ended and when the first frame after
// it was drawn: the page is on screen and usable.
func (b *browser) loadTimes(t testing.TB, url string) (load, frame float64) {
	t.Helper()
	var times []float64
	b.run(t,
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(url),
		chromedp.Evaluate(`new Promise(function (done) {
			function measure() {
				requestAnimationFrame(function () { setTimeout(function () {
					var nav = performance.getEntriesByType("navigation")[0];
					done([nav.loadEventEnd, performance.now()]);
				}, 0); });
			}
			if (document.readyState === "complete") { measure(); } else { addEventListener("load", measure); }
		})`, &times, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	return times[0], times[1]
}

// screenshot saves a full-page PNG under the git-ignored .lab/artifacts/ of
// the repository, so it outlives the test, and logs where.
func (b *browser) screenshot(t testing.TB, name string) string {
	t.Helper()
	// The page draws only the chunks of rows on screen (content-visibility),
	// a full-page capture too: have it draw them all, as it does to print.
	var png []byte
	b.run(t, chromedp.Evaluate(`document.querySelectorAll(".chunk").forEach(function (c) { c.style.contentVisibility = "visible"; })`, nil),
		chromedp.FullScreenshot(&png, 100),
		chromedp.Evaluate(`document.querySelectorAll(".chunk").forEach(function (c) { c.style.contentVisibility = ""; })`, nil))
	dir, err := filepath.Abs(filepath.Join("..", "..", ".lab", "artifacts", "fleetview"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
	return path
}

// filter sets a filter control (the input #q, the select #g) as a user who
// typed or picked the value would: the page sees an input or change event.
func (b *browser) filter(t testing.TB, id, value string) {
	t.Helper()
	var ok bool
	b.eval(t, fmt.Sprintf(`(function (el, v) {
		el.value = v;
		el.dispatchEvent(new Event(el.tagName === "SELECT" ? "change" : "input"));
		return el.value === v;
	})(document.getElementById(%q), %q)`, id, value), &ok)
	if !ok {
		t.Fatalf("filter #%s cannot take %q", id, value)
	}
}

// visibleRows are the grid rows shown, by node name.
func (b *browser) visibleRows(t testing.TB) []string {
	t.Helper()
	var names []string
	b.eval(t, `Array.from(document.querySelectorAll("#grid tr.n")).filter(function (r) { return !r.hidden && r.offsetParent !== null; }).map(function (r) { return r.id.slice(2); })`, &names)
	return names
}

var _ = cdp.NodeID(0) // cdp is imported for its types in chromedp's query options
