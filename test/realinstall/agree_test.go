package realinstall_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/operand"
)

// findings are what a judge says of one node, in one comparable shape.
type findings struct {
	Missing, Stuck, Order []string
}

func (f findings) empty() bool { return len(f.Missing)+len(f.Stuck)+len(f.Order) == 0 }

// of makes findings comparable: the judges list them in roster or rule
// order, the exporter by label value.
func of(missing, stuck, order []string) findings {
	return findings{Missing: sorted(missing), Stuck: sorted(stuck), Order: sorted(order)}
}

func (f findings) String() string {
	return fmt.Sprintf("missing %v stuck %v order %v", f.Missing, f.Stuck, f.Order)
}

// judgeFlagSets are the roster and rule choices watch and serve must make
// as the one-shot ones do.
var judgeFlagSets = [][]string{nil, {"--discover"}, {"--discover=false"}, {"--all-rules"}}

// checkLiveAgrees: with the same flags, watch's first frame and serve's
// /metrics say of every node what audit and order-check say; after one
// label change they agree again. audit has no rules to choose, so
// --all-rules goes to the others only.
func (in *install) checkLiveAgrees(t *testing.T) {
	for _, flags := range judgeFlagSets {
		if t.Failed() {
			return // one disagreement says it; the other flag sets would wait as long again
		}
		t.Run(strings.Join(append([]string{"flags"}, flags...), " "), func(t *testing.T) {
			w := in.startLive(t, append([]string{"watch", "-o", "json", "-l", in.selector()}, flags...))
			s := in.startLive(t, append([]string{"serve", "--listen", "127.0.0.1:0", "-l", in.selector()}, flags...))
			url := s.stderr.wait(t, regexp.MustCompile(`serving (http://\S+)/metrics`))[1]

			in.agree(t, flags, w, url)
			// One label change: the full node stops asking for the toolkit,
			// so its device plugin runs without it (and the toolkit pod goes).
			full := in.nodes["full"]
			in.label(t, full, "kubectl-label", map[string]string{operand.LabelPrefix + operand.ContainerToolkit: "false"})
			t.Cleanup(func() {
				in.label(t, full, "gpu-operator", map[string]string{operand.LabelPrefix + operand.ContainerToolkit: "true"})
				in.settle(t)
			})
			in.agree(t, flags, w, url)
		})
	}
}

// agree waits until the one-shot judges, the watch's latest lines and the
// exporter's series say the same of every node, and fails with all three
// if they do not within the patience of a settling cluster. The exporter
// has series for nodes with findings only, and counts the rest.
func (in *install) agree(t *testing.T, flags []string, w *liveProcess, url string) {
	t.Helper()
	var oneShot, watched, served map[string]findings
	var judged int
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		oneShot, watched = in.oneShot(t, flags), w.frame()
		served, judged = scrape(t, url)
		withFindings := maps.Clone(oneShot)
		maps.DeleteFunc(withFindings, func(_ string, f findings) bool { return f.empty() })
		return maps.EqualFunc(oneShot, watched, equalFindings) && maps.EqualFunc(withFindings, served, equalFindings) && judged == len(oneShot), nil
	})
	if err != nil {
		t.Fatalf("flags %q: the judges disagree:\n one-shot %v\n watch    %v\n serve    %v (%d nodes judged)", flags, oneShot, watched, served, judged)
	}
}

func equalFindings(a, b findings) bool {
	return slices.Equal(a.Missing, b.Missing) && slices.Equal(a.Stuck, b.Stuck) && slices.Equal(a.Order, b.Order)
}

// oneShot is what audit -o json and order-check -o json say of each node.
func (in *install) oneShot(t *testing.T, flags []string) map[string]findings {
	auditFlags := slices.DeleteFunc(slices.Clone(flags), func(f string) bool { return f == "--all-rules" })
	out := map[string]findings{}
	for _, n := range in.auditJSONAny(t, auditFlags...).Nodes {
		r := gpuopstest.On(in.env).Run(t, append([]string{"order-check", "-o", "json", n.Node}, flags...)...)
		var o struct{ Findings []string }
		if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
			t.Fatalf("order-check %s: exit %d, %v\n%s%s", n.Node, r.Code, err, r.Stdout, r.Stderr)
		}
		out[n.Node] = of(n.Missing, n.Stuck, o.Findings)
	}
	return out
}

// auditJSONAny is audit -o json, whatever its exit code (0 or 1).
func (in *install) auditJSONAny(t *testing.T, args ...string) auditJSON {
	t.Helper()
	r := in.judge(t, append([]string{"audit", "-o", "json"}, args...)...)
	code := r.Code
	if code != 0 && code != 1 {
		code = 0 // decodeAudit fails the test with the output
	}
	return decodeAudit(t, r, code)
}

// scrape reads the findings of each node with any off the exporter's
// series, and how many nodes it judged; nothing before the first verdict.
func scrape(t *testing.T, url string) (map[string]findings, int) {
	t.Helper()
	fams := metricFamilies(t, url)
	if fams == nil {
		return nil, 0
	}
	raw := map[string]*findings{}
	each := func(name, label string, add func(f *findings, value string)) {
		for _, m := range fams[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if raw[labels["node"]] == nil {
				raw[labels["node"]] = &findings{}
			}
			add(raw[labels["node"]], labels[label])
		}
	}
	each("gpuops_operand_missing", "operand", func(f *findings, v string) { f.Missing = append(f.Missing, v) })
	each("gpuops_operand_stuck", "operand", func(f *findings, v string) { f.Stuck = append(f.Stuck, v) })
	each("gpuops_order_violation", "rule", func(f *findings, v string) { f.Order = append(f.Order, v) })
	out := map[string]findings{}
	for n, f := range raw {
		out[n] = of(f.Missing, f.Stuck, f.Order)
	}
	judged := 0
	for _, m := range fams["gpuops_nodes"].GetMetric() {
		judged += int(m.GetGauge().GetValue())
	}
	return out, judged
}

// metricFamilies is the exporter's /metrics, parsed; nil before the
// first verdict (/readyz not OK).
func metricFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// liveProcess is watch or serve running in the background.
type liveProcess struct {
	stdout, stderr *lines
}

func (in *install) startLive(t *testing.T, args []string) *liveProcess {
	t.Helper()
	cmd := gpuopstest.On(in.env).Command(t, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &liveProcess{stdout: readLines(out), stderr: readLines(errOut)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return p
}

// frame is each node's findings as the watch's latest line for it says.
func (p *liveProcess) frame() map[string]findings {
	out := map[string]findings{}
	for _, l := range p.stdout.all() {
		var w struct {
			Node                     string
			Deleted                  bool
			Missing, Stuck, Findings []string
		}
		if json.Unmarshal([]byte(l), &w) != nil {
			continue
		}
		if w.Deleted {
			delete(out, w.Node)
			continue
		}
		out[w.Node] = of(w.Missing, w.Stuck, w.Findings)
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// lines is a stream of lines kept whole.
type lines struct {
	mu   sync.Mutex
	kept []string
}

func readLines(r io.Reader) *lines {
	l := &lines{}
	go func() {
		s := bufio.NewScanner(r)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			l.mu.Lock()
			l.kept = append(l.kept, s.Text())
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.kept)
}

// wait waits for a line that re matches and returns its submatches.
func (l *lines) wait(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, s := range l.all() {
			if m = re.FindStringSubmatch(s); m != nil {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no line matching %s: %s", re, strings.Join(l.all(), "\n"))
	}
	return m
}
