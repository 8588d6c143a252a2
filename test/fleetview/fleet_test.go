package fleetview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/summary"
)

const (
	product  = summary.DefaultGroupBy
	kindKey  = "gpuops.test/kind" // what the fleet plan made of the node, for -l and --group-by
	present  = "nvidia.com/gpu.present"
	nodes    = 200
	patterns = 20 // the plan repeats every 20 nodes
)

// pools are the values of the product label, "" for nodes without it, and
// the short names the nodes are named by.
var pools = []struct{ label, short string }{
	{"NVIDIA-A100-SXM4-80GB", "a100"}, {"NVIDIA-H100-80GB-HBM3", "h100"}, {"NVIDIA-L40S", "l40s"}, {"Tesla-T4", "t4"}, {"", "cpu"},
}

// kinds by i % patterns; every other index is a healthy node.
var kinds = map[int]string{
	11: "tainted",    // asks for all five; a taint keeps every DaemonSet away: five MISSING
	12: "unselected", // no nvidia.com/gpu.present, which the driver DaemonSet selects: MISSING driver, toolkit without driver
	13: "order",      // asks for driver and device plugin only: device plugin without toolkit
	14: "paused",     // driver label paused-for-driver-upgrade: paused, toolkit without driver
	15: "optout",     // dcgm-exporter label false: disabled
	16: "disabled",   // nvidia.com/gpu.deploy.operands=false and no deploy label
	17: "starved",    // asks for the driver only, too little memory for its pod: Pending, MISSING driver
	18: "hostdriver", // driver label false (a host driver): disabled, and no order finding
}

// member is one node of the fleet as planned.
type member struct {
	name, kind string
	labels     map[string]string
	memory     string // capacity, when not the default
	taint      bool
}

func plan(env *testcluster.Env) []member {
	out := make([]member, nodes)
	for i := range out {
		kind := kinds[i%patterns]
		if kind == "" {
			kind = "healthy"
		}
		m := member{kind: kind, labels: map[string]string{kindKey: kind, present: "true"}}
		pool := pools[(i/patterns)%len(pools)]
		if pool.label != "" {
			m.labels[product] = pool.label
		}
		m.name = env.NodeName(fmt.Sprintf("%s-%03d", pool.short, i))
		if kind != "disabled" && kind != "order" && kind != "starved" {
			for _, o := range operand.Lab {
				m.labels[o.LabelKey()] = "true"
			}
		}
		driver := operand.LabelPrefix + operand.Driver
		switch kind {
		case "tainted":
			m.taint = true
		case "unselected":
			delete(m.labels, present)
		case "order":
			m.labels[driver] = "true"
			m.labels[operand.LabelPrefix+operand.DevicePlugin] = "true"
		case "paused":
			m.labels[driver] = "paused-for-driver-upgrade"
		case "optout":
			m.labels[operand.LabelPrefix+operand.DCGMExporter] = "false"
		case "disabled":
			m.labels[operand.OperandsLabel] = "false"
		case "starved":
			m.labels[driver] = "true"
			m.memory = "256Mi"
		case "hostdriver":
			m.labels[driver] = "false"
		}
		out[i] = m
	}
	return out
}

// runs says which operands the plan expects Running on the node, and
// whether a driver pod is expected Pending there.
func (m member) runs() (running []string, pending bool) {
	if m.taint {
		return nil, false
	}
	for _, o := range operand.Lab {
		if m.labels[o.LabelKey()] != "true" {
			continue
		}
		switch {
		case o.Name == operand.Driver && m.labels[present] != "true":
		case o.Name == operand.Driver && m.memory != "":
			pending = true
		default:
			running = append(running, o.Name)
		}
	}
	return running, pending
}

// createFleet creates the DaemonSets (the lab's five, the driver selecting
// GPU nodes only) and the nodes, and waits until every pod the plan expects
// is Running (and the starved drivers Pending).
func createFleet(t *testing.T, env *testcluster.Env, fleet []member) {
	t.Helper()
	ctx := context.Background()
	for _, o := range operand.Lab {
		sel, memory := map[string]string{o.LabelKey(): "true"}, "128Mi"
		if o.Name == operand.Driver {
			sel[present], memory = "true", "512Mi"
		}
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, testcluster.DaemonSet(env.Namespace, o.DaemonSet, sel, memory), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		err := env.Client.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector(env)})
		if err != nil {
			t.Errorf("delete the fleet's nodes: %v", err)
		}
	})
	g := new(errgroup.Group)
	g.SetLimit(8)
	wantRunning, wantPending := 0, 0
	for _, m := range fleet {
		running, pending := m.runs()
		wantRunning += len(running)
		if pending {
			wantPending++
		}
		g.Go(func() error {
			n := testcluster.FakeNode(m.name, m.labels)
			n.Labels[testcluster.LabelTestID] = env.ID
			if m.taint {
				n.Spec.Taints = []corev1.Taint{{Key: "example.com/gpu-broken", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
			}
			if m.memory != "" {
				q := resource.MustParse(m.memory)
				n.Status.Capacity[corev1.ResourceMemory], n.Status.Allocatable[corev1.ResourceMemory] = q, q
			}
			_, err := env.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create the fleet's nodes: %v", err)
	}
	t.Logf("fleet: %d nodes created; waiting for %d Running pods and %d Pending", len(fleet), wantRunning, wantPending)
	start := time.Now()
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running, pending := 0, 0
		for _, p := range pods {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodRunning:
				running++
			case p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "":
				pending++
			}
		}
		return running == wantRunning && pending == wantPending
	})
	t.Logf("fleet: pods settled in %s", time.Since(start).Round(time.Second))
}

func selector(env *testcluster.Env) string { return testcluster.LabelTestID + "=" + env.ID }

// decode runs a judge with -o json and decodes what it printed.
func decode(t *testing.T, env *testcluster.Env, out any, wantCode int, args ...string) {
	t.Helper()
	r := gpuopstest.On(env).Run(t, append(args, "-o", "json")...)
	if r.Code != wantCode {
		t.Fatalf("gpuops %q: exit %d, want %d\n%s", args, r.Code, wantCode, r.Stderr)
	}
	if err := json.Unmarshal([]byte(r.Stdout), out); err != nil {
		t.Fatalf("gpuops %q: %v\n%s", args, err, r.Stdout)
	}
}

type summaryJSON struct {
	OK     bool            `json:"ok"`
	Groups []summary.Group `json:"groups"`
	Nodes  []summary.Node  `json:"nodes"`
}

// The summary's counts equal, group by group, what audit and matrix say
// node by node (and the nodes' labels, for paused and disabled); its order
// counts equal what the start-up rules say of matrix's pods, and order-check
// agrees on every node with a finding.
func TestSummaryAgreesWithAuditAndMatrix(t *testing.T) {
	env := testcluster.New(t)
	env.Timeout = 10 * time.Minute
	fleet := plan(env)
	createFleet(t, env, fleet)
	sel := selector(env)

	var sum summaryJSON
	decode(t, env, &sum, 1, "summary", "-l", sel)
	var audit struct {
		Nodes []struct {
			Node    string   `json:"node"`
			Missing []string `json:"missing"`
		} `json:"nodes"`
	}
	decode(t, env, &audit, 1, "audit", "-l", sel)
	var matrix struct {
		Rows []struct {
			Node    string          `json:"node"`
			Present map[string]bool `json:"present"`
		} `json:"rows"`
	}
	decode(t, env, &matrix, 0, "matrix", "-l", sel)
	list, err := env.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(audit.Nodes) != nodes || len(matrix.Rows) != nodes || len(list.Items) != nodes {
		t.Fatalf("audit judged %d nodes, matrix %d, the cluster has %d; want %d", len(audit.Nodes), len(matrix.Rows), len(list.Items), nodes)
	}

	// What audit, matrix and the labels say, counted the summary's way.
	type key struct{ group, operand, state string }
	want := map[key]int{}
	wantNodes := map[string]int{}
	wantOrder := map[[2]string]int{}
	wantFindings := map[string][]string{} // node -> "missing:<operand>" and "order:<finding>"
	labels := map[string]map[string]string{}
	for _, n := range list.Items {
		labels[n.Name] = n.Labels
	}
	missing := map[string][]string{}
	for _, a := range audit.Nodes {
		missing[a.Node] = a.Missing
		for _, op := range a.Missing {
			wantFindings[a.Node] = append(wantFindings[a.Node], "missing:"+op)
		}
	}
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	for _, row := range matrix.Rows {
		l := labels[row.Node]
		group := l[product]
		if group == "" {
			group = summary.NoGroup
		}
		wantNodes[group]++
		for _, o := range operand.Lab {
			v, labelled := l[o.LabelKey()]
			count := func(state string, yes bool) {
				if yes {
					want[key{group, o.Name, state}]++
				}
			}
			count("asked", v == "true")
			count("running", row.Present[o.Column])
			count("missing", slices.Contains(missing[row.Node], o.Name))
			count("paused", labelled && strings.HasPrefix(v, "paused-"))
			count("disabled", (labelled && v == "false") || l[operand.OperandsLabel] == "false")
		}
		column := func(name string) string { o, _ := operand.Lookup(operand.Lab, name); return o.Column }
		for _, r := range rules {
			if row.Present[column(r.Operand)] && !row.Present[column(r.Needs)] && !r.HostProvides(l) {
				wantOrder[[2]string{group, r.Finding}]++
				wantFindings[row.Node] = append(wantFindings[row.Node], "order:"+r.Finding)
			}
		}
	}

	got := map[key]int{}
	gotOrder := map[[2]string]int{}
	gotNodes := map[string]int{}
	var groups []string
	for _, g := range sum.Groups {
		groups = append(groups, g.Name)
		gotNodes[g.Name] = g.Nodes
		for _, oc := range g.Operands {
			for _, state := range summary.States {
				if n := oc.Counts.Of(state); n > 0 {
					got[key{g.Name, oc.Operand, state.String()}] = n
				}
			}
		}
		for _, rc := range g.Order {
			if rc.Nodes > 0 {
				gotOrder[[2]string{g.Name, rc.Finding}] = rc.Nodes
			}
		}
	}
	if wantGroups := []string{pools[0].label, pools[1].label, pools[2].label, pools[3].label, summary.NoGroup}; !slices.Equal(groups, wantGroups) {
		t.Errorf("groups %q, want %q", groups, wantGroups)
	}
	if !maps.Equal(got, want) {
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s %s %s: summary %d, audit/matrix/labels %d", k.group, k.operand, k.state, got[k], n)
			}
		}
		for k, n := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s %s %s: summary %d, audit/matrix/labels 0", k.group, k.operand, k.state, n)
			}
		}
	}
	if !maps.Equal(gotNodes, wantNodes) || !maps.Equal(gotOrder, wantOrder) {
		t.Errorf("nodes per group %v, want %v; order findings %v, want %v", gotNodes, wantNodes, gotOrder, wantOrder)
	}

	// Every kind of finding is there, and the summary lists exactly the
	// nodes with findings.
	for _, k := range []key{{pools[0].label, "driver", "missing"}, {pools[1].label, "driver", "paused"}, {pools[2].label, "dcgm-exporter", "disabled"}, {summary.NoGroup, "gpu-feature-discovery", "missing"}} {
		if got[k] == 0 {
			t.Errorf("the fleet lacks %v", k)
		}
	}
	gotFindings := map[string][]string{}
	for _, n := range sum.Nodes {
		for _, f := range n.Findings {
			gotFindings[n.Name] = append(gotFindings[n.Name], f.Kind+":"+f.Subject)
			if len(f.Reasons) == 0 {
				t.Errorf("%s %s %s has no reason", n.Name, f.Kind, f.Subject)
			}
		}
	}
	if !maps.EqualFunc(gotFindings, wantFindings, slices.Equal[[]string]) {
		t.Errorf("nodes with findings:\n%v\nwant:\n%v", gotFindings, wantFindings)
	}

	// order-check --all-rules agrees on every node with an order finding.
	for node, fs := range wantFindings {
		var order []string
		for _, f := range fs {
			if rest, ok := strings.CutPrefix(f, "order:"); ok {
				order = append(order, rest)
			}
		}
		if len(order) == 0 {
			continue
		}
		var v struct {
			Findings []string `json:"findings"`
		}
		decode(t, env, &v, 1, "order-check", node, "--all-rules")
		if !slices.Equal(v.Findings, order) {
			t.Errorf("order-check %s: %q, summary %q", node, v.Findings, order)
		}
	}

	t.Run("reasons", func(t *testing.T) { checkReasons(t, sum, fleet) })
	t.Run("group-by", func(t *testing.T) { checkGroupBy(t, env, fleet) })
	t.Run("junit", func(t *testing.T) { checkJUnit(t, env, missing, wantFindings) })
	t.Run("html", func(t *testing.T) { checkHTML(t, env, sum, fleet) })
}

// Each kind of finding carries the reason the control plane gives it.
func checkReasons(t *testing.T, sum summaryJSON, fleet []member) {
	want := map[string]string{ // kind of node -> a reason code of its findings
		"tainted":    "untolerated-taint",
		"unselected": "not-selected",
		"order":      "broken-order",
		"paused":     "broken-order",
		"starved":    "pod-pending",
	}
	kind := map[string]string{}
	for _, m := range fleet {
		kind[m.name] = m.kind
	}
	seen := map[string]bool{}
	for _, n := range sum.Nodes {
		for _, f := range n.Findings {
			for _, r := range f.Reasons {
				if r.Code == want[kind[n.Name]] {
					seen[kind[n.Name]] = true
				}
			}
		}
	}
	for k, code := range want {
		if !seen[k] {
			t.Errorf("no %s node has a finding with reason %s", k, code)
		}
	}
}

// --group-by any label: grouped by what the plan made of each node, the
// groups are the kinds, and only the healthy group is free of findings.
func checkGroupBy(t *testing.T, env *testcluster.Env, fleet []member) {
	var sum summaryJSON
	decode(t, env, &sum, 1, "summary", "-l", selector(env), "--group-by", kindKey)
	per := map[string]int{}
	for _, m := range fleet {
		per[m.kind]++
	}
	for _, g := range sum.Groups {
		if g.Nodes != per[g.Name] {
			t.Errorf("group %s: %d nodes, want %d", g.Name, g.Nodes, per[g.Name])
		}
		clean := g.Name == "healthy" || g.Name == "optout" || g.Name == "hostdriver" || g.Name == "disabled"
		if clean != (g.Findings == 0) {
			t.Errorf("group %s: %d nodes with findings", g.Name, g.Findings)
		}
	}
	if len(sum.Groups) != len(per) {
		t.Errorf("%d groups, want %d", len(sum.Groups), len(per))
	}
	// The healthy ones alone: exit 0.
	if r := gpuopstest.On(env).Run(t, "summary", "-l", selector(env)+","+kindKey+"=healthy"); r.Code != 0 || !strings.Contains(r.Stdout, "missing=0") {
		t.Errorf("summary of healthy nodes: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// A key that is no label key is refused before anything is read.
	if r := gpuopstest.On(env).Run(t, "summary", "--group-by", "not a label"); r.Code != 2 || !strings.HasPrefix(r.Stderr, "error: --group-by: invalid label key") {
		t.Errorf("bad --group-by: exit %d, %q", r.Code, r.Stderr)
	}
}

// audit -o junit validates against the JUnit schema and fails exactly the
// audit's findings; order-check --all-rules -o junit has a case per rule and
// fails exactly the node's order findings.
func checkJUnit(t *testing.T, env *testcluster.Env, missing map[string][]string, findings map[string][]string) {
	r := gpuopstest.On(env).Run(t, "audit", "-l", selector(env), "-o", "junit")
	if r.Code != 1 {
		t.Fatalf("audit -o junit: exit %d\n%s", r.Code, r.Stderr)
	}
	validate(t, r.Stdout)
	total := 0
	for _, ops := range missing {
		total += len(ops)
	}
	if got := strings.Count(r.Stdout, "<failure "); got != total || !strings.Contains(r.Stdout, fmt.Sprintf(`<testsuites name="gpuops audit" tests="%d" failures="%d"`, strings.Count(r.Stdout, "<testcase "), total)) {
		t.Errorf("audit -o junit: %d failures, the audit has %d findings\n%.600s", got, total, r.Stdout)
	}
	nodes := slices.Sorted(maps.Keys(findings))
	for _, node := range nodes {
		order := 0
		for _, f := range findings[node] {
			if strings.HasPrefix(f, "order:") {
				order++
			}
		}
		if order == 0 {
			continue
		}
		r := gpuopstest.On(env).Run(t, "order-check", node, "--all-rules", "-o", "junit")
		validate(t, r.Stdout)
		if r.Code != 1 || strings.Count(r.Stdout, "<testcase ") != len(operand.RulesFor(operand.Lab, operand.AllRules)) || strings.Count(r.Stdout, "<failure ") != order {
			t.Errorf("order-check %s -o junit: exit %d, want a case per rule and %d failures\n%s", node, r.Code, order, r.Stdout)
		}
		return
	}
	t.Error("no node with an order finding")
}

// validate checks a JUnit document with xmllint against the schema in
// pkg/report/testdata.
func validate(t *testing.T, doc string) {
	t.Helper()
	gpuopstest.ValidJUnit(t, filepath.Join("..", ".."), doc)
}
