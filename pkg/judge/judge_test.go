package judge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Short names for hand-built snapshots.
var (
	driver  = operand.Lab.Driver()
	toolkit = operand.Lab.ContainerToolkit()
	plugin  = operand.Lab.DevicePlugin()
	gfd     = operand.Lab.GPUFeatureDiscovery()
	dcgm    = operand.Lab.DCGMExporter()
)

// Short names of the snapshot builder's.
var (
	asks    = snapshottest.Asks
	running = snapshottest.Running
)

func node(name string, labels map[string]string) snapshot.Node {
	return snapshottest.Node(name, labels)
}

// missing is the audit of s as the tests compare it: a node a line, in the
// audit's order, "node:" and what is missing there.
func missing(s *snapshot.Snapshot) []string {
	out := []string{}
	for _, a := range judge.Audit(s, operand.Lab) {
		out = append(out, strings.Join(append([]string{a.Node + ":"}, a.Missing...), " "))
	}
	return out
}

func TestAudit(t *testing.T) {
	deleting := running("n", toolkit)
	deleting.Deleting = true
	for _, tc := range []struct {
		name  string
		nodes []snapshot.Node
		pods  []snapshot.Pod
		want  []string // per node, "node:" and what is missing
	}{
		{
			name:  "asked and running",
			nodes: []snapshot.Node{node("n", asks(driver, toolkit))},
			pods:  []snapshot.Pod{running("n", driver), running("n", toolkit)},
			want:  []string{"n:"},
		},
		{
			name:  "missing operands in roster order, not pod order",
			nodes: []snapshot.Node{node("n", asks(dcgm, driver, plugin))},
			pods:  []snapshot.Pod{running("n", plugin)},
			want:  []string{"n: driver dcgm-exporter"},
		},
		{
			name: "false, missing, True and empty labels ask for nothing",
			nodes: []snapshot.Node{node("n", map[string]string{
				driver.LabelKey(): "false", toolkit.LabelKey(): "True", plugin.LabelKey(): "",
			})},
			want: []string{"n:"},
		},
		{
			name:  "node with no label at all",
			nodes: []snapshot.Node{node("n", nil)},
			want:  []string{"n:"},
		},
		{
			name:  "pod running where it is not asked for is no finding",
			nodes: []snapshot.Node{node("n", map[string]string{driver.LabelKey(): "false"})},
			pods:  []snapshot.Pod{running("n", driver)},
			want:  []string{"n:"},
		},
		{
			name:  "pending pod does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending}},
			want:  []string{"n: container-toolkit"},
		},
		{
			name:  "failed pod does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodFailed}},
			want:  []string{"n: container-toolkit"},
		},
		{
			name:  "pod being deleted does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{deleting},
			want:  []string{"n: container-toolkit"},
		},
		{
			name:  "unscheduled pod counts for no node",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending, Reason: "0/1 nodes are available"}},
			want:  []string{"n: container-toolkit"},
		},
		{
			name:  "hand-made pod with the app label but no DaemonSet owner does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: toolkit.DaemonSet + "-fake", Node: "n", Phase: corev1.PodRunning}},
			want:  []string{"n: container-toolkit"},
		},
		{
			name:  "pod of another DaemonSet does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", Node: "n", DaemonSet: toolkit.DaemonSet + "-old", Phase: corev1.PodRunning}},
			want:  []string{"n: container-toolkit"},
		},
		{
			name:  "pod on another node does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit)), node("m", nil)},
			pods:  []snapshot.Pod{running("m", toolkit)},
			want:  []string{"m:", "n: container-toolkit"},
		},
		{
			name:  "one running pod among pending and deleting ones is enough",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods: []snapshot.Pod{
				{Name: "a", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending},
				deleting,
				running("n", toolkit),
			},
			want: []string{"n:"},
		},
		{
			name:  "natural node order",
			nodes: []snapshot.Node{node("lab-node-10", nil), node("lab-node-2", nil), node("lab-node-1", nil)},
			want:  []string{"lab-node-1:", "lab-node-2:", "lab-node-10:"},
		},
		{
			name: "no nodes, no lines",
			want: []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: tc.nodes, Pods: tc.pods}
			if got := missing(s); !slices.Equal(got, tc.want) {
				t.Errorf("audit: %q, want %q", got, tc.want)
			}
			someMissing := slices.ContainsFunc(tc.want, func(l string) bool { return !strings.HasSuffix(l, ":") })
			if failed := judge.AuditFailed(judge.Audit(s, operand.Lab)); failed != someMissing {
				t.Errorf("AuditFailed = %v for %q", failed, tc.want)
			}
		})
	}
}

// TestAuditSpec is the lab's step 6 on the state the lab has reached by then.
func TestAuditSpec(t *testing.T) {
	s := specState(false)
	want := []string{"lab-node-0:", "lab-node-1:", "lab-node-2:"}
	if got := missing(s); !slices.Equal(got, want) {
		t.Errorf("audit: %q, want %q", got, want)
	}
}

// specState is the lab of docs/lab.md after step 5 (and after step 7 when optin).
func specState(optin bool) *snapshot.Snapshot {
	gpu := func(extra map[string]string) map[string]string {
		l := asks(operand.Lab...)
		l["nvidia.com/gpu.present"] = "true"
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	bare := map[string]string{"kubernetes.io/hostname": "lab-node-2"}
	if optin {
		bare[plugin.LabelKey()] = "true"
	}
	b := snapshottest.New("gpu-operator").
		Node("lab-node-2", bare).
		Node("lab-node-1", gpu(map[string]string{driver.LabelKey(): "false", dcgm.LabelKey(): "false"})).
		Node("lab-node-0", gpu(nil)).
		Running("lab-node-0", operand.Lab...).
		Running("lab-node-1", toolkit, plugin, gfd)
	if optin {
		b.Running("lab-node-2", plugin)
	}
	return b.Snapshot()
}

func TestOrder(t *testing.T) {
	const finding = "device-plugin-without-toolkit"
	deleting := running("n", toolkit)
	deleting.Deleting = true
	for _, tc := range []struct {
		name string
		pods []snapshot.Pod
		want string
	}{
		{"nothing on the node", nil, "ok"},
		{"toolkit and plugin", []snapshot.Pod{running("n", toolkit), running("n", plugin)}, "ok"},
		{"toolkit alone", []snapshot.Pod{running("n", toolkit)}, "ok"},
		{"plugin alone", []snapshot.Pod{running("n", plugin)}, finding},
		{"plugin with a pending toolkit", []snapshot.Pod{
			running("n", plugin), {Name: "t", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending},
		}, finding},
		{"plugin with a deleting toolkit", []snapshot.Pod{running("n", plugin), deleting}, finding},
		{"plugin with a hand-made toolkit pod", []snapshot.Pod{
			running("n", plugin), {Name: toolkit.DaemonSet + "-x", Node: "n", Phase: corev1.PodRunning},
		}, finding},
		{"plugin with the toolkit on another node", []snapshot.Pod{running("n", plugin), running("m", toolkit)}, finding},
		{"pending plugin alone", []snapshot.Pod{
			{Name: "p", Node: "n", DaemonSet: plugin.DaemonSet, Phase: corev1.PodPending},
		}, "ok"},
		{"plugin on another node", []snapshot.Pod{running("m", plugin)}, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{node("n", nil), node("m", nil)}, Pods: tc.pods}
			v, err := judge.Order(s, "n", operand.Lab, []operand.Rule{operand.DeviceRule})
			if err != nil {
				t.Fatal(err)
			}
			if v.String() != tc.want || v.OK() != (tc.want == "ok") {
				t.Errorf("verdict %q (ok=%v), want %q", v.String(), v.OK(), tc.want)
			}
		})
	}
}

func TestOrderSpec(t *testing.T) {
	s := specState(true)
	want := map[string]string{"lab-node-0": "ok", "lab-node-1": "ok", "lab-node-2": "device-plugin-without-toolkit"}
	for n, w := range want {
		v, err := judge.Order(s, n, operand.Lab, []operand.Rule{operand.DeviceRule})
		if err != nil {
			t.Fatal(err)
		}
		if v.String() != w {
			t.Errorf("%s: %q, want %q", n, v.String(), w)
		}
	}
}

func TestOrderUnknownNode(t *testing.T) {
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{node("n", nil)}, Pods: []snapshot.Pod{running("ghost", plugin)}}
	_, err := judge.Order(s, "ghost", operand.Lab, []operand.Rule{operand.DeviceRule})
	var nf *judge.NodeNotFoundError
	if !errors.As(err, &nf) || nf.Node != "ghost" {
		t.Fatalf("err = %v, want NodeNotFoundError for ghost", err)
	}
}

func TestOrderUnknownOperandInRule(t *testing.T) {
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{node("n", nil)}}
	_, err := judge.Order(s, "n", operand.Lab, []operand.Rule{{Operand: "mig-manager", Needs: "driver", Finding: "x"}})
	if err == nil {
		t.Fatal("a rule naming an operand outside the roster must be an error")
	}
}

func TestMatrix(t *testing.T) {
	m := judge.NewIndex(specState(true)).Matrix(operand.Lab)
	// A row a node, its name and the columns present there.
	var got []string
	for _, r := range m.Rows {
		row := []string{r.Node + ":"}
		for _, c := range m.Columns {
			if r.Present.Has(c) {
				row = append(row, c)
			}
		}
		got = append(got, strings.Join(row, " "))
	}
	want := []string{
		"lab-node-0: driver toolkit device-plugin gfd dcgm",
		"lab-node-1: toolkit device-plugin gfd",
		"lab-node-2: device-plugin",
	}
	if !slices.Equal(m.Columns, []string{"driver", "toolkit", "device-plugin", "gfd", "dcgm"}) || !slices.Equal(got, want) || m.TotalPods != 9 {
		t.Errorf("matrix: columns %q, rows %q, %d pods; want rows %q, 9 pods", m.Columns, got, m.TotalPods, want)
	}
}

// Rows kept from many matrices of one roster (serve keeps a verdict a node,
// each judged in a batch of its own) keep nothing of their matrix but
// themselves: not a slice of column names a batch.
func TestRowsKeepNoColumnsOfTheirBatch(t *testing.T) {
	x := judge.NewIndex(specState(true))
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 10000
	rows := make([]judge.MatrixRow, 0, n)
	before := heap()
	for range n {
		rows = append(rows, x.Matrix(operand.Lab).Rows[0])
	}
	if per := float64(int64(heap())-int64(before)) / n; per > 16 { // the rows themselves were made before
		t.Errorf("a row kept holds %.0f bytes of its matrix besides itself", per)
	}
	runtime.KeepAlive(rows)
}

func TestMatrixTotalPods(t *testing.T) {
	deleting := running("n", toolkit)
	deleting.Deleting = true
	s := &snapshot.Snapshot{
		Nodes: []snapshot.Node{node("n", nil)},
		Pods: []snapshot.Pod{
			running("n", plugin),
			// A DaemonSet outside the roster still counts: TOTAL_PODS is every
			// Running DaemonSet pod of the namespace.
			{Name: "other", Node: "n", DaemonSet: "nvidia-operator-validator", Phase: corev1.PodRunning},
			// Running on a node the snapshot does not hold (narrowed by -l).
			running("elsewhere", gfd),
			// None of these count.
			deleting,
			{Name: "pending", Node: "n", DaemonSet: driver.DaemonSet, Phase: corev1.PodPending},
			{Name: "unscheduled", DaemonSet: driver.DaemonSet, Phase: corev1.PodPending},
			{Name: "hand-made", Node: "n", Phase: corev1.PodRunning},
		},
	}
	m := judge.NewIndex(s).Matrix(operand.Lab)
	if m.TotalPods != 3 {
		t.Errorf("TotalPods = %d, want 3", m.TotalPods)
	}
	if got := m.Rows[0].Present.Map(); !got["device-plugin"] || got["toolkit"] || got["driver"] || got["gfd"] {
		t.Errorf("row n = %v, want only device-plugin", got)
	}
}

// A row's presence reads and writes as the map of column to bool it stands
// for, a roster longer than 64 operands (a discovered one) included.
func TestPresentIsItsMap(t *testing.T) {
	for _, n := range []int{0, 5, 64, 65, 130} {
		var columns, present []string
		want := map[string]bool{}
		for i := range n {
			c := fmt.Sprintf("op-%d", i)
			columns = append(columns, c)
			want[c] = i%3 == 0 || i == n-1
			if want[c] {
				present = append(present, c)
			}
		}
		p := judge.NewPresent(columns, present...)
		for c, w := range want {
			if p.Has(c) != w {
				t.Errorf("%d columns: Has(%q) = %v, want %v", n, c, !w, w)
			}
		}
		if p.Has("not-a-column") {
			t.Errorf("%d columns: a column not in the matrix is present", n)
		}
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := json.Marshal(want); string(got) != string(w) {
			t.Errorf("%d columns: JSON %s, want %s", n, got, w)
		}
	}
}

func TestNaturalOrder(t *testing.T) {
	want := []string{
		"lab-node-0", "lab-node-1", "lab-node-2", "lab-node-10", "lab-node-10a", "lab-node-10b", "lab-node-11",
		"n1", "n01a", "n1a", "n-02", "n-2", "n-10", "n-a", "n.1",
		"node", "node-1", "node-001-x", "node-1-x", "node-a",
	}
	var nodes []snapshot.Node
	for i := range want {
		// A fixed shuffle, so the input order is not the answer.
		nodes = append(nodes, node(want[(i*7)%len(want)], nil))
	}
	names := func(nodes []snapshot.Node) (out []string) {
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return out
	}
	s := &snapshot.Snapshot{Nodes: nodes}
	shuffled := names(nodes)
	sorted := judge.SortedNodes(s)
	if got := names(sorted); !slices.Equal(got, want) {
		t.Errorf("order:\n%v\nwant:\n%v", got, want)
	}
	if got := names(s.Nodes); !slices.Equal(got, shuffled) {
		t.Errorf("SortedNodes reordered the snapshot's own nodes: %v", got)
	}
	// Sorted in place once, the snapshot's own nodes are the judges' own.
	judge.SortNodes(s)
	if got := names(s.Nodes); !slices.Equal(got, want) {
		t.Errorf("SortNodes: %v\nwant:\n%v", got, want)
	}
	if again := judge.SortedNodes(s); &again[0] != &s.Nodes[0] {
		t.Error("SortedNodes copied nodes already in order")
	}
}
