package openreports_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

var now = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

// serveScope judges as serve does: explained, with health and every rule.
var serveScope = pipeline.Scope{Options: pipeline.Options{Explain: true, Health: true, StuckAfter: 30 * time.Minute},
	Roster: operand.Lab, Rules: operand.RulesFor(operand.Lab, operand.AllRules)}

// labNodes are n GPU nodes asking for the lab's five, all running or none.
func labNodes(n int, running bool) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: "gpu-operator"}
	for _, o := range operand.Lab {
		s.DaemonSets = append(s.DaemonSets, snapshot.DaemonSet{Name: o.DaemonSet, NodeSelector: map[string]string{o.LabelKey(): "true"}})
	}
	for i := range n {
		node := snapshot.Node{Name: fmt.Sprintf("gpu-node-%04d", i), Ready: true, Labels: map[string]string{operand.GPUPresent: "true"}}
		for _, o := range operand.Lab {
			node.Labels[o.LabelKey()] = "true"
			if running {
				s.Pods = append(s.Pods, snapshot.Pod{Name: fmt.Sprintf("%s-%05d", o.DaemonSet, i), Node: node.Name, Target: node.Name,
					DaemonSet: o.DaemonSet, Phase: corev1.PodRunning, Health: snapshot.PodHealth{Ready: true}})
			}
		}
		s.Nodes = append(s.Nodes, node)
	}
	return s
}

// randomCluster has nodes with every verdict: labels true, false, odd,
// paused (stuck or not), operands=false; pods present or not, of any
// operand, so order rules break.
func randomCluster(r *rand.Rand) *snapshot.Snapshot {
	values := []string{"true", "true", "true", "false", "True", "", "pre-installed", "paused-for-mig-change", "true_paused-for-driver-upgrade"}
	s := labNodes(0, false)
	for i := range 2 + r.IntN(10) {
		n := snapshot.Node{Name: fmt.Sprintf("node-%d", i), Ready: r.IntN(5) > 0, Labels: map[string]string{operand.GPUPresent: "true"}}
		for _, o := range operand.Lab {
			if r.IntN(5) > 0 {
				n.Labels[o.LabelKey()] = values[r.IntN(len(values))]
				if r.IntN(2) == 0 {
					if n.LabelChanges == nil {
						n.LabelChanges = map[string]snapshot.LabelChange{}
					}
					n.LabelChanges[o.LabelKey()] = snapshot.LabelChange{Manager: "nvidia-mig-manager", Time: now.Add(-time.Duration(r.IntN(60)) * time.Minute)}
				}
			}
			if r.IntN(2) == 0 {
				s.Pods = append(s.Pods, snapshot.Pod{Name: fmt.Sprintf("%s-%d", o.DaemonSet, i), Node: n.Name, Target: n.Name, DaemonSet: o.DaemonSet,
					Phase: corev1.PodRunning, Health: snapshot.PodHealth{Ready: r.IntN(3) > 0}})
			}
		}
		if r.IntN(8) == 0 {
			n.Labels[operand.OperandsLabel] = "false"
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

type key struct{ node, rule string }

// results of one policy and outcome, by node and rule.
func results(rs []v1alpha1.ReportResult, policy string, res v1alpha1.Result) []key {
	var out []key
	for _, r := range rs {
		if r.Policy == policy && r.Result == res {
			out = append(out, key{r.Subjects[0].Name, r.Rule})
		}
	}
	return out
}

// TestResultsAreTheVerdicts checks that every result is a verdict the judges
// give, and every verdict a result: audit's pass and fail are the operands
// asked for and those MISSING or STUCK, order's its rules and findings,
// health's the GPU nodes usable or not; each warning and unexpected pod of
// --explain is a warn; the summary counts the results.
func TestResultsAreTheVerdicts(t *testing.T) {
	seen := map[string]int{} // what the clusters held, so none of it goes untested
	for seed := range uint64(200) {
		res, err := serveScope.Judge(randomCluster(rand.New(rand.NewPCG(seed, 1))), now)
		if err != nil {
			t.Fatal(err)
		}
		reps := reportsOf(res, false)
		if len(reps) != 1 {
			t.Fatalf("seed %d: %d reports of a small cluster, want 1", seed, len(reps))
		}
		rep := reps[0]
		got := rep.Results
		var want struct{ pass, fail, orderPass, orderFail, healthPass, healthFail, warn []key }
		for _, v := range res.Nodes {
			for _, op := range v.Audit.Asked {
				if slices.Contains(v.Audit.Missing, op) {
					want.fail = append(want.fail, key{v.Node, op})
				} else {
					want.pass = append(want.pass, key{v.Node, op})
				}
			}
			for _, op := range v.Audit.Stuck {
				want.fail = append(want.fail, key{v.Node, op})
			}
			for _, w := range v.Why().Warnings {
				if !w.Stuck {
					want.warn = append(want.warn, key{v.Node, cmp(w.Operand, w.Label)})
				}
			}
			for _, u := range v.Why().Unexpected {
				want.warn = append(want.warn, key{v.Node, u.Operand})
			}
			for _, r := range v.Order.Rules {
				if slices.Contains(v.Order.Findings, r.Finding) {
					want.orderFail = append(want.orderFail, key{v.Node, r.Finding})
				} else {
					want.orderPass = append(want.orderPass, key{v.Node, r.Finding})
				}
			}
			if h := v.Health; h.Judged && h.Usable {
				want.healthPass = append(want.healthPass, key{v.Node, openreports.UsableRule})
			} else if h.Judged {
				want.healthFail = append(want.healthFail, key{v.Node, openreports.UsableRule})
			}
		}
		for _, c := range []struct {
			policy string
			res    v1alpha1.Result
			want   []key
		}{
			{openreports.Audit, openreports.Pass, want.pass}, {openreports.Audit, openreports.Fail, want.fail}, {openreports.Audit, openreports.Warn, want.warn},
			{openreports.Order, openreports.Pass, want.orderPass}, {openreports.Order, openreports.Fail, want.orderFail},
			{openreports.Health, openreports.Pass, want.healthPass}, {openreports.Health, openreports.Fail, want.healthFail},
		} {
			if g := results(got, c.policy, c.res); !slices.Equal(g, c.want) {
				t.Errorf("seed %d: %s %s results %v, want %v", seed, c.policy, c.res, g, c.want)
			}
		}
		n := len(want.pass) + len(want.fail) + len(want.warn) + len(want.orderPass) + len(want.orderFail) + len(want.healthPass) + len(want.healthFail)
		if len(got) != n {
			t.Errorf("seed %d: %d results, want %d", seed, len(got), n)
		}
		sum := v1alpha1.ReportSummary{Pass: len(want.pass) + len(want.orderPass) + len(want.healthPass),
			Fail: len(want.fail) + len(want.orderFail) + len(want.healthFail), Warn: len(want.warn)}
		if rep.Summary != sum {
			t.Errorf("seed %d: summary %+v, want %+v", seed, rep.Summary, sum)
		}
		if (sum.Fail > 0) != (res.AuditFailed() || res.OrderFailed() || res.Unusable()) {
			t.Errorf("seed %d: %d fail results, yet the judges' exit says %v", seed, sum.Fail, !(sum.Fail > 0))
		}
		for _, r := range got {
			seen[r.Policy+" "+string(r.Result)+" "+r.Properties["reason"]]++
			if r.Source != openreports.Source || r.Severity == "" || r.Timestamp.Seconds != now.Unix() || r.Subjects[0].Kind != "Node" {
				t.Fatalf("seed %d: result %+v", seed, r)
			}
			if r.Policy == openreports.Audit && r.Result == openreports.Warn && r.Properties["reason"] == "unexpected" &&
				(len(r.Subjects) != 2 || r.Subjects[1].Kind != "Pod" || r.Subjects[1].Namespace != "gpu-operator") {
				t.Errorf("seed %d: an unexpected pod's result names %+v, want the node and the pod", seed, r.Subjects)
			}
		}
	}
	for _, k := range []string{"audit pass ", "audit fail missing", "audit fail stuck", "audit warn ", "audit warn unexpected",
		"order pass ", "order fail broken-order", "health pass ", "health fail "} {
		if seen[k] == 0 {
			t.Errorf("no result %q in 200 random clusters: %v", k, seen)
		}
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestMissingSaysWhy checks a failed result's message and properties: the
// operand, its label and value, the reason codes of --explain.
func TestMissingSaysWhy(t *testing.T) {
	s := labNodes(1, false)
	s.DaemonSets = s.DaemonSets[1:] // no driver DaemonSet at all
	res, err := serveScope.Judge(s, now)
	if err != nil {
		t.Fatal(err)
	}
	r := nodesOf(res)[0].Results[0]
	if r.Policy != openreports.Audit || r.Rule != operand.Driver || r.Result != openreports.Fail || r.Severity != openreports.High ||
		r.Properties["label"] != "nvidia.com/gpu.deploy.driver" || r.Properties["value"] != "true" || r.Properties["reason"] != "missing" ||
		r.Properties["codes"] != "no-daemonset" || !strings.HasPrefix(r.Description, "MISSING driver: ") {
		t.Errorf("the missing driver's result is %+v", r)
	}
}

// TestSplitBySize measures the bytes a node's results take and checks the
// split: one report while they fit MaxBytes, a report per node (its scope
// the node, the same results) past it, and always for named nodes.
func TestSplitBySize(t *testing.T) {
	for _, running := range []bool{true, false} {
		res, err := serveScope.Judge(labNodes(100, running), now)
		if err != nil {
			t.Fatal(err)
		}
		nodes := nodesOf(res)
		b, _ := json.Marshal(reportsOf(res, false)[0])
		t.Logf("all running %v: %d results a node, %d bytes a node; one report of 100 nodes: %d bytes", running, len(nodes[0].Results), nodes[0].Bytes, len(b))
		if nodes[0].Bytes > 6000 || len(nodes[0].Results) != 10 {
			t.Errorf("a lab node's results take %d bytes (%d results): MaxBytes' comment says about 5 KB (10)", nodes[0].Bytes, len(nodes[0].Results))
		}
	}
	res, err := serveScope.Judge(labNodes(300, false), now)
	if err != nil {
		t.Fatal(err)
	}
	nodes := nodesOf(res)
	total := 0
	for _, n := range nodes {
		total += n.Bytes
	}
	one := openreports.Assemble(nodes, "", false, total)
	if len(one) != 1 || one[0].Name != "gpuops" || one[0].Scope != nil || len(one[0].Results) != 3000 {
		t.Fatalf("results that fit make %d reports, want one named gpuops, no scope, 3000 results", len(one))
	}
	if b, _ := json.Marshal(one[0]); len(b) > total+1000 {
		t.Errorf("the report is %d bytes, its results %d: the metadata should add little", len(b), total)
	}
	split := openreports.Assemble(nodes, "", false, total-1)
	if len(split) != 300 {
		t.Fatalf("results past the size make %d reports, want 300", len(split))
	}
	for i, r := range split {
		if r.Name != "gpuops-"+nodes[i].Name || r.Scope == nil || r.Scope.Kind != "Node" || r.Scope.Name != nodes[i].Name ||
			len(r.Results) != 10 || r.Summary != openreports.Summarize(r.Results) || r.Summary.Fail == 0 {
			t.Fatalf("report %d: %s scope %+v, %d results, summary %+v", i, r.Name, r.Scope, len(r.Results), r.Summary)
		}
	}
	if got := reportsOf(res, false); len(got) != 300 {
		t.Errorf("300 failing lab nodes (%d bytes) make %d reports, want one per node past MaxBytes %d", total, len(got), openreports.MaxBytes)
	}
	small, _ := serveScope.Judge(labNodes(3, false), now)
	if got := reportsOf(small, true); len(got) != 3 || got[1].Name != "gpuops-gpu-node-0001" {
		t.Errorf("named nodes make %d reports, want one per node", len(got))
	}
}

// TestNames checks that names and labels are valid, stable and apart for
// any kubeconfig context, however long or odd.
func TestNames(t *testing.T) {
	if openreports.Name("", "") != "gpuops" || openreports.Name("", "n1") != "gpuops-n1" {
		t.Errorf("the local cluster's names are %q, %q", openreports.Name("", ""), openreports.Name("", "n1"))
	}
	seen := map[string]string{}
	for _, c := range []string{"kind-a", "KIND-A", "arn:aws:eks:eu-west-1:123456789012:cluster/gpu-train", "arn:aws:eks:eu-west-1:123456789012:cluster/gpu_train",
		"-.-", strings.Repeat("x", 300), "gke_proj_zone_c"} {
		for _, node := range []string{"", "gpu-node-1", strings.Repeat("n", 250)} {
			name := openreports.Name(c, node)
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				t.Errorf("Name(%q, %q) = %q: %v", c, node, name, errs)
			}
			if other, ok := seen[name]; ok {
				t.Errorf("Name(%q, %q) = %q, as for %s", c, node, name, other)
			}
			seen[name] = c + "/" + node
			if name != openreports.Name(c, node) {
				t.Errorf("Name(%q, %q) changes", c, node)
			}
		}
		rep := openreports.Assemble(nil, c, false, openreports.MaxBytes)[0]
		if v := rep.Labels[openreports.ClusterLabel]; len(validation.IsValidLabelValue(v)) > 0 || rep.Annotations[openreports.ClusterAnnotation] != c ||
			rep.Labels[operand.ManagedByLabel] != openreports.ManagedBy {
			t.Errorf("cluster %q: labels %v annotations %v", c, rep.Labels, rep.Annotations)
		}
	}
}

// TestCarryKeepsWhenFound checks that a result judged again, the same,
// keeps the time it was found, and a changed one takes the new time.
func TestCarryKeepsWhenFound(t *testing.T) {
	before, _ := serveScope.Judge(labNodes(1, true), now)
	s := labNodes(1, true)
	s.Pods = s.Pods[1:] // the driver's pod is gone
	after, _ := serveScope.Judge(s, now.Add(time.Hour))
	prev, next := nodesOf(before)[0], nodesOf(after)[0]
	openreports.Found(nil).Carry(prev.Results).Carry(next.Results) // nothing before prev: its own times
	for _, r := range next.Results {
		changed := r.Rule == operand.Driver || r.Policy == openreports.Health || r.Rule == "toolkit-without-driver"
		if at := time.Unix(r.Timestamp.Seconds, 0); changed != at.Equal(now.Add(time.Hour)) {
			t.Errorf("%s %s %s found at %s", r.Policy, r.Rule, r.Result, at.UTC())
		}
	}
	a := openreports.Assemble([]openreports.Node{prev}, "", false, openreports.MaxBytes)[0]
	again, _ := serveScope.Judge(labNodes(1, true), now.Add(time.Minute))
	b := openreports.Assemble(nodesOf(again), "", false, openreports.MaxBytes)[0]
	if !openreports.Same(&a, &b) {
		t.Error("the same verdicts a minute later are not the Same report")
	}
	c := openreports.Assemble([]openreports.Node{next}, "", false, openreports.MaxBytes)[0]
	if openreports.Same(&a, &c) {
		t.Error("a missing driver makes the Same report")
	}
}

// TestDigestOfTheServersCopy checks that the report the server hands back
// (its metadata filled in, every result found at another time) has the
// Digest of the one written, and that a changed result changes it: what
// serve keeps of the reports the server holds.
func TestDigestOfTheServersCopy(t *testing.T) {
	r, _ := serveScope.Judge(labNodes(2, true), now)
	for _, perNode := range []bool{false, true} {
		written := reportsOf(r, perNode)[0]
		b, err := json.Marshal(written)
		if err != nil {
			t.Fatal(err)
		}
		var held v1alpha1.ClusterReport
		if err := json.Unmarshal(b, &held); err != nil {
			t.Fatal(err)
		}
		held.ResourceVersion, held.UID, held.Generation = "42", "0b0e", 3
		held.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "gpuops", Operation: metav1.ManagedFieldsOperationApply}}
		for i := range held.Results {
			held.Results[i].Timestamp = metav1.Timestamp{Seconds: now.Add(time.Hour).Unix()}
		}
		if openreports.Digest(&held) != openreports.Digest(&written) || !openreports.Same(&held, &written) {
			t.Errorf("perNode=%v: the server's copy has another digest", perNode)
		}
		held.Results[0].Description += "!"
		if openreports.Digest(&held) == openreports.Digest(&written) || openreports.Same(&held, &written) {
			t.Errorf("perNode=%v: a changed result keeps the digest", perNode)
		}
	}
}

// nodesOf are the results of every node of a result.
func nodesOf(r *outcome.Result) []openreports.Node {
	return openreports.Nodes(r.Nodes, r.Namespace, r.Taken)
}

// reportsOf are the reports of a result, one per node if perNode (the
// command judged named nodes).
func reportsOf(r *outcome.Result, perNode bool) []v1alpha1.ClusterReport {
	return openreports.Assemble(nodesOf(r), "", perNode, openreports.MaxBytes)
}

// BenchmarkDigest digests the reports of 5,000 nodes, one per node, as
// serve does with the reports it makes and those it lists; against its
// baseline in the same run: the same digest made from a copy of each
// result as JSON, as Digest did before it encoded into the hash.
func BenchmarkDigest(b *testing.B) {
	r, _ := serveScope.Judge(labNodes(5000, false), now)
	reports := reportsOf(r, true)
	copied := func(r *v1alpha1.ClusterReport) openreports.Sum {
		h := sha256.New()
		head, _ := json.Marshal(openreports.Head(r))
		h.Write(head)
		for _, res := range r.Results {
			res.Timestamp = metav1.Timestamp{}
			key, _ := json.Marshal(res)
			h.Write([]byte(string(key)))
		}
		return openreports.Sum(h.Sum(nil))
	}
	allocated := func(digest func(*v1alpha1.ClusterReport) openreports.Sum) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range reports {
			digest(&reports[i])
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(reports))
	}
	var encoded, baseline float64
	b.ResetTimer()
	for range b.N {
		encoded, baseline = allocated(openreports.Digest), allocated(copied)
	}
	b.ReportMetric(encoded, "B/report")
	b.ReportMetric(baseline, "baseline-B/report")
}
