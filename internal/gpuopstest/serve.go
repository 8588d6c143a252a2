package gpuopstest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Patience bounds each wait of a background gpuops (a watch's line, a
// server's series) for the cluster and gpuops to get somewhere.
const Patience = 90 * time.Second

// Process is gpuops running in the background (a watch, a server), its
// stdout and stderr kept line by line, read to the end so that it never
// blocks on them. It is killed when the test ends, and what it said on
// stderr is logged if the test failed.
type Process struct {
	Stdout, Stderr *Lines

	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs gpuops against the cluster with args in the background.
func (c Cluster) Start(t testing.TB, args ...string) *Process {
	t.Helper()
	p := &Process{args: args, cmd: c.Command(t, args...), done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.Stdout, p.Stderr = readLines(out), readLines(errOut)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("gpuops %s said:\n%s", strings.Join(args, " "), strings.Join(p.Stderr.All(), "\n"))
		}
	})
	return p
}

// Stop sends sig and returns the exit code.
func (p *Process) Stop(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("gpuops %s still running 30s after %v", strings.Join(p.args, " "), sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// Kill ends the process, if it still runs, and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Lines is a stream of lines, kept whole, that tests wait on.
type Lines struct {
	mu      sync.Mutex
	lines   []string
	next    int           // where the next Expect starts looking
	changed chan struct{} // closed and replaced on each new line
	closed  bool
}

func readLines(r io.Reader) *Lines {
	l := &Lines{changed: make(chan struct{})}
	go func() {
		s := bufio.NewScanner(r)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, s.Text())
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.closed = true
		close(l.changed)
		l.mu.Unlock()
	}()
	return l
}

// All are the lines so far.
func (l *Lines) All() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// Expect waits until, after the last line Expect found, there is a line
// matching each pattern (whole), in any order (a batch prints its nodes in
// natural order, but which node changes first is the cluster's business),
// and returns the submatches of each.
func (l *Lines) Expect(t testing.TB, patterns ...string) [][]string {
	t.Helper()
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile("^" + p + "$")
	}
	var found [][]string
	l.await(t, fmt.Sprintf("lines %q", patterns), func(lines []string) bool {
		found = make([][]string, len(res))
		last := l.next
		for i, re := range res {
			for j := l.next; j < len(lines) && found[i] == nil; j++ {
				if m := re.FindStringSubmatch(lines[j]); m != nil {
					found[i], last = m, max(last, j+1)
				}
			}
			if found[i] == nil {
				return false
			}
		}
		l.next = last
		return true
	})
	return found
}

// Said waits until any line so far, whichever Expect found before, starts
// with prefix.
func (l *Lines) Said(t testing.TB, prefix string) {
	t.Helper()
	l.await(t, fmt.Sprintf("a line %q…", prefix), func(lines []string) bool {
		return slices.ContainsFunc(lines, func(s string) bool { return strings.HasPrefix(s, prefix) })
	})
}

// await waits until found holds of the lines (called under the lock).
func (l *Lines) await(t testing.TB, what string, found func(lines []string) bool) {
	t.Helper()
	deadline := time.After(Patience)
	for {
		l.mu.Lock()
		if found(l.lines) {
			l.mu.Unlock()
			return
		}
		changed, closed, seen := l.changed, l.closed, strings.Join(l.lines[l.next:], "\n")
		l.mu.Unlock()
		if closed {
			t.Fatalf("output ended without %s; after the last match:\n%s", what, seen)
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s within %s; after the last match:\n%s", what, Patience, seen)
		}
	}
}

// Server is gpuops serve in the background.
type Server struct {
	*Process
	URL string // where it serves, without a path
}

// Serve runs gpuops against the cluster with args, a serve command line,
// listening on a port of its own (--listen 127.0.0.1:0 is added), and
// returns once it says where it serves.
func (c Cluster) Serve(t testing.TB, args ...string) *Server {
	t.Helper()
	p := c.Start(t, append(slices.Clone(args), "--listen", "127.0.0.1:0")...)
	m := p.Stderr.Expect(t, `serving (http://\S+)/metrics`)
	return &Server{Process: p, URL: m[0][1]}
}

// Get is the status code and body of a GET of path.
func (s *Server) Get(t testing.TB, path string) (int, string) {
	t.Helper()
	code, body, err := s.get(path)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

func (s *Server) get(path string) (int, string, error) {
	resp, err := http.Get(s.URL + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// Ready reports whether /readyz says the first verdict is made.
func (s *Server) Ready() bool {
	code, _, err := s.get("/readyz")
	return err == nil && code == http.StatusOK
}

// WaitReady waits until the server is Ready.
func (s *Server) WaitReady(t testing.TB) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, Patience, true,
		func(context.Context) (bool, error) { return s.Ready(), nil })
	if err != nil {
		t.Fatalf("serve at %s not ready within %s", s.URL, Patience)
	}
}

// Scrape is one scrape of /metrics.
func (s *Server) Scrape(t testing.TB) Scrape {
	t.Helper()
	m, err := s.TryScrape()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TryScrape is one scrape of /metrics, or why there is none (the server
// not up yet, or stopped).
func (s *Server) TryScrape() (Scrape, error) {
	code, body, err := s.get("/metrics")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %d %s", code, body)
	}
	return ParseScrape(body)
}

// WaitFor scrapes until cond holds, and returns that scrape. Scraping is
// the only way to learn what an exporter says; it is cheap. A scrape that
// fails (the server not up yet, or stopped) is tried again.
func (s *Server) WaitFor(t testing.TB, what string, cond func(Scrape) bool) Scrape {
	t.Helper()
	var m Scrape
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, Patience, true, func(context.Context) (bool, error) {
		got, err := s.TryScrape()
		if err != nil {
			return false, nil
		}
		m = got
		return cond(m), nil
	})
	if err != nil {
		t.Fatalf("metrics never showed %s within %s; last scrape:\n%s", what, Patience, m)
	}
	return m
}

// Scrape is a scrape of Prometheus' text format read by prometheus/common's
// own parser, by family name.
type Scrape map[string]*dto.MetricFamily

// ParseScrape reads text as Prometheus does.
func ParseScrape(text string) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

// Sample is one series of a family: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples are the series of name, in the order written.
func (m Scrape) Samples(name string) []Sample {
	var out []Sample
	for _, s := range m[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		v := s.GetGauge().GetValue() + s.GetCounter().GetValue() + s.GetUntyped().GetValue() // one of them is set
		out = append(out, Sample{Labels: labels, Value: v})
	}
	return out
}

// Value is the value of the first series of name with these labels (and
// maybe more), and whether there is one.
func (m Scrape) Value(name string, labels map[string]string) (float64, bool) {
	for _, s := range m.Samples(name) {
		if matches(s.Labels, labels) {
			return s.Value, true
		}
	}
	return 0, false
}

func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// HasSeries reports whether a series of name with these labels is there,
// whatever its value.
func (m Scrape) HasSeries(name string, labels map[string]string) bool {
	_, ok := m.Value(name, labels)
	return ok
}

// IsOne reports whether a series of name with these labels is there at 1:
// the flag a family of "1 for each …" sets.
func (m Scrape) IsOne(name string, labels map[string]string) bool {
	for _, s := range m.Samples(name) {
		if matches(s.Labels, labels) && s.Value == 1 {
			return true
		}
	}
	return false
}

// LabelAtOne are the values of label of the series of name at 1, sorted.
func (m Scrape) LabelAtOne(name, label string) []string {
	var out []string
	for _, s := range m.Samples(name) {
		if s.Value == 1 {
			out = append(out, s.Labels[label])
		}
	}
	slices.Sort(out)
	return out
}

// Series lists the series of name as "label=value,..." strings, labels
// by name.
func (m Scrape) Series(name string) []string {
	var out []string
	for _, s := range m.Samples(name) {
		out = append(out, labelString(s.Labels))
	}
	return out
}

func labelString(labels map[string]string) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		ls = append(ls, k+"="+labels[k])
	}
	return strings.Join(ls, ",")
}

// String is gpuops's series, one line each with its value, for a
// failure's message.
func (m Scrape) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(name, "gpuops_") {
			for _, s := range m.Samples(name) {
				fmt.Fprintf(&b, "%s{%s} %v\n", name, labelString(s.Labels), s.Value)
			}
		}
	}
	return b.String()
}
