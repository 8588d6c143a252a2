package judge_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
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

// asks returns deploy labels with value "true" for the given operands.
func asks(ops ...operand.Operand) map[string]string {
	l := map[string]string{}
	for _, o := range ops {
		l[o.LabelKey()] = "true"
	}
	return l
}

func node(name string, labels map[string]string) snapshot.Node {
	return snapshot.Node{Name: name, Labels: labels, Ready: true}
}

func running(node string, o operand.Operand) snapshot.Pod {
	return snapshot.Pod{Name: o.DaemonSet + "-" + node, Node: node, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning}
}

// labJudged is s judged as the lab judges: its five operands, the device
// rule.
func labJudged(t *testing.T, s *snapshot.Snapshot) *outcome.Result {
	t.Helper()
	r, err := pipeline.Scope{Roster: operand.Lab, Rules: []operand.Rule{operand.DeviceRule}}.Judge(s, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func auditText(t *testing.T, s *snapshot.Snapshot) string {
	return string(report.LabAudit(labJudged(t, s)))
}

func TestAudit(t *testing.T) {
	deleting := running("n", toolkit)
	deleting.Deleting = true
	for _, tc := range []struct {
		name  string
		nodes []snapshot.Node
		pods  []snapshot.Pod
		want  string
	}{
		{
			name:  "asked and running",
			nodes: []snapshot.Node{node("n", asks(driver, toolkit))},
			pods:  []snapshot.Pod{running("n", driver), running("n", toolkit)},
			want:  "n OK\n",
		},
		{
			name:  "missing operands in roster order, not pod order",
			nodes: []snapshot.Node{node("n", asks(dcgm, driver, plugin))},
			pods:  []snapshot.Pod{running("n", plugin)},
			want:  "n MISSING driver\nn MISSING dcgm-exporter\n",
		},
		{
			name: "false, missing, True and empty labels ask for nothing",
			nodes: []snapshot.Node{node("n", map[string]string{
				driver.LabelKey(): "false", toolkit.LabelKey(): "True", plugin.LabelKey(): "",
			})},
			want: "n OK\n",
		},
		{
			name:  "node with no label at all",
			nodes: []snapshot.Node{node("n", nil)},
			want:  "n OK\n",
		},
		{
			name:  "pod running where it is not asked for is no finding",
			nodes: []snapshot.Node{node("n", map[string]string{driver.LabelKey(): "false"})},
			pods:  []snapshot.Pod{running("n", driver)},
			want:  "n OK\n",
		},
		{
			name:  "pending pod does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending}},
			want:  "n MISSING container-toolkit\n",
		},
		{
			name:  "failed pod does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodFailed}},
			want:  "n MISSING container-toolkit\n",
		},
		{
			name:  "pod being deleted does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{deleting},
			want:  "n MISSING container-toolkit\n",
		},
		{
			name:  "unscheduled pod counts for no node",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending, Reason: "0/1 nodes are available"}},
			want:  "n MISSING container-toolkit\n",
		},
		{
			name:  "hand-made pod with the app label but no DaemonSet owner does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: toolkit.DaemonSet + "-fake", Node: "n", Phase: corev1.PodRunning}},
			want:  "n MISSING container-toolkit\n",
		},
		{
			name:  "pod of another DaemonSet does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods:  []snapshot.Pod{{Name: "p", Node: "n", DaemonSet: toolkit.DaemonSet + "-old", Phase: corev1.PodRunning}},
			want:  "n MISSING container-toolkit\n",
		},
		{
			name:  "pod on another node does not count",
			nodes: []snapshot.Node{node("n", asks(toolkit)), node("m", nil)},
			pods:  []snapshot.Pod{running("m", toolkit)},
			want:  "m OK\nn MISSING container-toolkit\n",
		},
		{
			name:  "one running pod among pending and deleting ones is enough",
			nodes: []snapshot.Node{node("n", asks(toolkit))},
			pods: []snapshot.Pod{
				{Name: "a", Node: "n", DaemonSet: toolkit.DaemonSet, Phase: corev1.PodPending},
				deleting,
				running("n", toolkit),
			},
			want: "n OK\n",
		},
		{
			name:  "natural node order",
			nodes: []snapshot.Node{node("lab-node-10", nil), node("lab-node-2", nil), node("lab-node-1", nil)},
			want:  "lab-node-1 OK\nlab-node-2 OK\nlab-node-10 OK\n",
		},
		{
			name: "no nodes, no lines",
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: tc.nodes, Pods: tc.pods}
			if got := auditText(t, s); got != tc.want {
				t.Errorf("audit:\n%s\nwant:\n%s", got, tc.want)
			}
			if failed := judge.AuditFailed(judge.Audit(s, operand.Lab)); failed != bytes.Contains([]byte(tc.want), []byte(" MISSING ")) {
				t.Errorf("AuditFailed = %v for:\n%s", failed, tc.want)
			}
		})
	}
}

// TestAuditSpec is the lab's step 6 on the state the lab has reached by then.
func TestAuditSpec(t *testing.T) {
	s := specState(false)
	want := "lab-node-0 OK\nlab-node-1 OK\nlab-node-2 OK\n"
	if got := auditText(t, s); got != want {
		t.Errorf("audit:\n%s\nwant:\n%s", got, want)
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
	s := &snapshot.Snapshot{
		Namespace: "gpu-operator",
		Nodes: []snapshot.Node{
			node("lab-node-2", map[string]string{"kubernetes.io/hostname": "lab-node-2"}),
			node("lab-node-1", gpu(map[string]string{driver.LabelKey(): "false", dcgm.LabelKey(): "false"})),
			node("lab-node-0", gpu(nil)),
		},
	}
	for _, o := range operand.Lab {
		s.Pods = append(s.Pods, running("lab-node-0", o))
	}
	for _, o := range []operand.Operand{toolkit, plugin, gfd} {
		s.Pods = append(s.Pods, running("lab-node-1", o))
	}
	if optin {
		s.Nodes[0].Labels[plugin.LabelKey()] = "true"
		s.Pods = append(s.Pods, running("lab-node-2", plugin))
	}
	return s
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
	b := bytes.NewBuffer(report.LabMatrix(labJudged(t, specState(true))))
	want := "lab-node-0 driver=yes toolkit=yes device-plugin=yes gfd=yes dcgm=yes\n" +
		"lab-node-1 driver=no toolkit=yes device-plugin=yes gfd=yes dcgm=no\n" +
		"lab-node-2 driver=no toolkit=no device-plugin=yes gfd=no dcgm=no\n" +
		"TOTAL_PODS=9\n"
	if b.String() != want {
		t.Errorf("matrix:\n%s\nwant:\n%s", b.String(), want)
	}
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
	m := judge.BuildMatrix(s, operand.Lab)
	if m.TotalPods != 3 {
		t.Errorf("TotalPods = %d, want 3", m.TotalPods)
	}
	if got := m.Rows[0].Present; !got["device-plugin"] || got["toolkit"] || got["driver"] || got["gfd"] {
		t.Errorf("row n = %v, want only device-plugin", got)
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
	var got []string
	for _, n := range judge.SortedNodes(&snapshot.Snapshot{Nodes: nodes}) {
		got = append(got, n.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("order:\n%v\nwant:\n%v", got, want)
	}
}
