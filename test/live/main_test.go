// Package live_test runs gpuops watch and gpuops serve against a real
// control plane and changes the cluster under them: each finding must
// appear in the watch lines and the metrics, and go again. It also stops the
// API server (SIGSTOP, as test/faults does), so it always runs on a cluster
// of its own.
package live_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

func TestMain(m *testing.M) {
	os.Unsetenv(testcluster.EnvKubeconfig) // never a shared cluster
	// The in-process tracker's informers log a watch cut short at its end.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	testcluster.Main(m)
}

// patience bounds each wait for the cluster and gpuops to get somewhere.
const patience = 90 * time.Second

// fleet is a test's namespace with the lab's five operand DaemonSets, and
// the arguments that point gpuops at it and at the test's nodes only.
type fleet struct {
	env  *testcluster.Env
	args []string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	env := testcluster.New(t)
	env.Timeout = patience
	for _, o := range operand.Lab {
		ds := testcluster.DaemonSet(env.Namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "64Mi")
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &fleet{env: env, args: []string{"--kubeconfig", env.Kubeconfig, "-n", env.Namespace,
		"-l", testcluster.LabelTestID + "=" + env.ID, "--all-rules"}}
}

// gpuNode adds a node that asks for every operand of the lab.
func (f *fleet) gpuNode(t *testing.T, suffix string, opts ...testcluster.NodeOption) string {
	t.Helper()
	labels := map[string]string{}
	for _, o := range operand.Lab {
		labels[o.LabelKey()] = "true"
	}
	name := f.env.NodeName(suffix)
	f.env.AddNode(t, name, labels, opts...)
	return name
}

// output is a stream of lines, kept whole, that tests wait on.
type output struct {
	mu      sync.Mutex
	lines   []string
	next    int           // where the next expect starts looking
	changed chan struct{} // closed and replaced on each new line
	closed  bool
}

func newOutput(r io.Reader) *output {
	o := &output{changed: make(chan struct{})}
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			o.mu.Lock()
			o.lines = append(o.lines, s.Text())
			close(o.changed)
			o.changed = make(chan struct{})
			o.mu.Unlock()
		}
		o.mu.Lock()
		o.closed = true
		close(o.changed)
		o.mu.Unlock()
	}()
	return o
}

// expect waits until, after the last line expect found, there is a line
// matching each pattern, in any order (a batch prints its nodes in natural
// order, but which node changes first is the cluster's business), and
// returns the submatches of each.
func (o *output) expect(t *testing.T, patterns ...string) [][]string {
	t.Helper()
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile("^" + p + "$")
	}
	deadline := time.After(patience)
	for {
		o.mu.Lock()
		found, last := make([][]string, len(res)), o.next
		missing := 0
		for i, re := range res {
			for j := o.next; j < len(o.lines) && found[i] == nil; j++ {
				if m := re.FindStringSubmatch(o.lines[j]); m != nil {
					found[i], last = m, max(last, j+1)
				}
			}
			if found[i] == nil {
				missing++
			}
		}
		if missing == 0 {
			o.next = last
			o.mu.Unlock()
			return found
		}
		changed, closed, seen := o.changed, o.closed, strings.Join(o.lines[o.next:], "\n")
		o.mu.Unlock()
		if closed {
			t.Fatalf("output ended without lines %q; after the last match:\n%s", patterns, seen)
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no lines %q within %s; after the last match:\n%s", patterns, patience, seen)
		}
	}
}

func (o *output) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lines)
}

// process is gpuops running in the background.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *output
	done           chan struct{}
}

func start(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(gpuopstest.Binary(t), args...), done: make(chan struct{})}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdout, p.stderr = newOutput(out), newOutput(errOut)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// stop sends sig and returns the exit code.
func (p *process) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("gpuops still running 30s after %v; stderr:\n%s", sig, strings.Join(p.stderr.all(), "\n"))
	}
	return p.cmd.ProcessState.ExitCode()
}

// server is gpuops serve in the background.
type server struct {
	*process
	url string
}

func serve(t *testing.T, args ...string) *server {
	t.Helper()
	p := start(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	m := p.stderr.expect(t, `serving (http://\S+)/metrics`)
	return &server{process: p, url: m[0][1]}
}

func (s *server) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// metrics is one scrape.
type metrics map[string]*dto.MetricFamily

func (s *server) scrape(t *testing.T) metrics {
	t.Helper()
	code, body := s.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the value of the series of name with the given labels (and
// maybe more), and whether there is one.
func (m metrics) value(name string, labels map[string]string) (float64, bool) {
	f := m[name]
	if f == nil {
		return 0, false
	}
	for _, s := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && have[k] == v
		}
		if match {
			if s.GetGauge() != nil {
				return s.GetGauge().GetValue(), true
			}
			return s.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// has reports whether a series of name with these labels is there, at 1.
func (m metrics) has(name string, labels map[string]string) bool {
	v, ok := m.value(name, labels)
	return ok && v == 1
}

// series lists the series of name as "label=value,..." strings.
func (m metrics) series(name string) []string {
	var out []string
	for _, s := range m[name].GetMetric() {
		var ls []string
		for _, l := range s.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		out = append(out, strings.Join(ls, ","))
	}
	return out
}

// waitFor scrapes until cond holds. Scraping is the only way to learn what
// an exporter says; it is cheap.
func (s *server) waitFor(t *testing.T, what string, cond func(metrics) bool) metrics {
	t.Helper()
	var m metrics
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, patience, true,
		func(context.Context) (bool, error) { m = s.scrape(t); return cond(m), nil })
	if err != nil {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if strings.HasPrefix(name, "gpuops_") {
				fmt.Fprintf(&b, "%s %v\n", name, m.series(name))
			}
		}
		t.Fatalf("metrics never showed %s within %s; last scrape:\n%s", what, patience, b.String())
	}
	return m
}
