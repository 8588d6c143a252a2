package realinstall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

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
			w := gpuopstest.On(in.env).Start(t, append([]string{"watch", "-o", "json", "-l", in.selector()}, flags...)...)
			s := gpuopstest.On(in.env).Serve(t, append([]string{"serve", "-l", in.selector()}, flags...)...)

			in.agree(t, flags, w, s)
			// One label change: the full node stops asking for the toolkit,
			// so its device plugin runs without it (and the toolkit pod goes).
			full := in.nodes["full"]
			in.label(t, full, "kubectl-label", map[string]string{operand.LabelPrefix + operand.ContainerToolkit: "false"})
			t.Cleanup(func() {
				in.label(t, full, "gpu-operator", map[string]string{operand.LabelPrefix + operand.ContainerToolkit: "true"})
				in.settle(t)
			})
			in.agree(t, flags, w, s)
		})
	}
}

// agree waits until the one-shot judges, the watch's latest lines and the
// exporter's series say the same of every node, and fails with all three
// if they do not within the patience of a settling cluster. The exporter
// has series for nodes with findings only, and counts the rest.
func (in *install) agree(t *testing.T, flags []string, w *gpuopstest.Process, s *gpuopstest.Server) {
	t.Helper()
	var oneShot, watched, served map[string]findings
	var judged int
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		oneShot, watched = in.oneShot(t, flags), frame(w)
		served, judged = scrape(t, s)
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
func scrape(t *testing.T, s *gpuopstest.Server) (map[string]findings, int) {
	t.Helper()
	fams := readyScrape(t, s)
	if fams == nil {
		return nil, 0
	}
	raw := map[string]*findings{}
	each := func(name, label string, add func(f *findings, value string)) {
		for _, m := range fams.Samples(name) {
			if raw[m.Labels["node"]] == nil {
				raw[m.Labels["node"]] = &findings{}
			}
			add(raw[m.Labels["node"]], m.Labels[label])
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
	for _, m := range fams.Samples("gpuops_nodes") {
		judged += int(m.Value)
	}
	return out, judged
}

// readyScrape is the exporter's /metrics; nil before the first verdict
// (/readyz not OK).
func readyScrape(t *testing.T, s *gpuopstest.Server) gpuopstest.Scrape {
	t.Helper()
	if !s.Ready() {
		return nil
	}
	return s.Scrape(t)
}

// frame is each node's findings as the watch's latest line for it says.
func frame(w *gpuopstest.Process) map[string]findings {
	out := map[string]findings{}
	for _, l := range w.Stdout.All() {
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
