package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/summary"
)

var (
	toolkit = operand.Lab.ContainerToolkit()
	dcgm    = operand.Lab.DCGMExporter()
)

// TestFindingsComeAndGo changes the cluster under a running gpuops serve
// (with --events) and gpuops watch: each finding must show in the watch
// lines, the metrics and the node's Events, and leave them again.
func TestFindingsComeAndGo(t *testing.T) {
	f := newFleet(t)
	a, b := f.gpuNode(t, "a"), f.gpuNode(t, "b")
	srv := serve(t, append(f.args, "--events")...)
	w := gpuopstest.Cluster{}.Start(t, append([]string{"watch"}, f.args...)...)
	ok := func(n float64) func(gpuopstest.Scrape) bool {
		return func(m gpuopstest.Scrape) bool {
			good, _ := m.Value("gpuops_nodes", map[string]string{"state": "ok"})
			bad, _ := m.Value("gpuops_nodes", map[string]string{"state": "finding"})
			return good == n && bad == 0
		}
	}
	m := srv.WaitFor(t, "two healthy nodes", ok(2))
	w.Stdout.Expect(t, a+" OK", b+" OK")
	for _, o := range operand.Lab {
		for _, name := range []string{"gpuops_operand_desired_nodes", "gpuops_operand_running_nodes"} {
			if v, _ := m.Value(name, map[string]string{"operand": o.Name}); v != 2 {
				t.Errorf("%s{operand=%q} = %v, want 2", name, o.Name, v)
			}
		}
	}
	srv.Stderr.Expect(t, `ready: \d+ nodes judged in \S+`)

	t.Log("give a a GPU model: its pool (serve's default --group-by) follows the label")
	pool := func(node, pool string) map[string]string { return map[string]string{"node": node, "pool": pool} }
	if !m.IsOne("gpuops_node_pool", pool(a, summary.NoGroup)) || !m.IsOne("gpuops_node_pool", pool(b, summary.NoGroup)) {
		t.Errorf("gpuops_node_pool %q, want a and b in pool %s", m.Series("gpuops_node_pool"), summary.NoGroup)
	}
	f.env.LabelNode(t, a, summary.DefaultGroupBy, "NVIDIA-H100-80GB-HBM3")
	srv.WaitFor(t, a+" in its GPU model's pool", func(m gpuopstest.Scrape) bool {
		return m.IsOne("gpuops_node_pool", pool(a, "NVIDIA-H100-80GB-HBM3")) && len(m.Series("gpuops_node_pool")) == 2
	})

	t.Log("opt a out of the toolkit under its running device plugin")
	violation := map[string]string{"node": a, "rule": operand.DeviceRule.Finding, "operand": operand.DevicePlugin, "needs": operand.ContainerToolkit}
	f.env.LabelNode(t, a, toolkit.LabelKey(), "false")
	w.Stdout.Expect(t, a+" "+operand.DeviceRule.Finding)
	srv.WaitFor(t, "the device plugin without toolkit on "+a, func(m gpuopstest.Scrape) bool {
		running, _ := m.Value("gpuops_operand_running_nodes", map[string]string{"operand": toolkit.Name})
		return m.IsOne("gpuops_order_violation", violation) && running == 1
	})
	f.env.LabelNode(t, a, toolkit.LabelKey(), "true")
	w.Stdout.Expect(t, a+" ok")
	srv.WaitFor(t, "the violation gone", func(m gpuopstest.Scrape) bool { return !m.IsOne("gpuops_order_violation", violation) && ok(2)(m) })
	waitForEvents(t, f.env, a, "OrderViolation", "OrderRestored")

	t.Log("taint b so that every operand pod is evicted")
	broken := corev1.Taint{Key: "gpuops.test/broken", Value: "yes", Effect: corev1.TaintEffectNoExecute}
	setTaints(t, f.env, b, broken)
	var missing []string
	for _, o := range operand.Lab {
		missing = append(missing, b+" MISSING "+o.Name)
	}
	w.Stdout.Expect(t, missing...)
	srv.WaitFor(t, "every operand missing on "+b+" for the taint", func(m gpuopstest.Scrape) bool {
		for _, o := range operand.Lab {
			if !m.IsOne("gpuops_operand_missing_reason", map[string]string{"node": b, "operand": o.Name, "reason": "untolerated-taint"}) {
				return false
			}
		}
		return true
	})
	setTaints(t, f.env, b)
	w.Stdout.Expect(t, b+" OK")
	srv.WaitFor(t, "b healthy again", ok(2))

	t.Log("delete a's DCGM exporter pod while the node has no memory left for another")
	setMemory(t, f.env, a, "64Mi")
	deletePod(t, f.env, a, dcgm)
	w.Stdout.Expect(t, a+" MISSING "+dcgm.Name)
	srv.WaitFor(t, "the DCGM exporter missing on "+a, func(m gpuopstest.Scrape) bool {
		return m.IsOne("gpuops_operand_missing", map[string]string{"node": a, "operand": dcgm.Name}) &&
			m.IsOne("gpuops_operand_missing_reason", map[string]string{"node": a, "operand": dcgm.Name, "reason": "pod-pending"})
	})
	setMemory(t, f.env, a, "256Gi")
	w.Stdout.Expect(t, a+" OK")
	srv.WaitFor(t, "the DCGM exporter back", ok(2))
	waitForEvents(t, f.env, a, "OperandMissing", "OperandRunning")

	t.Log("add a node, then delete it")
	c := f.gpuNode(t, "c")
	w.Stdout.Expect(t, c+" OK")
	srv.WaitFor(t, "three healthy nodes", ok(3))
	if err := f.env.Client.CoreV1().Nodes().Delete(context.Background(), c, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.Stdout.Expect(t, c+" DELETED")
	srv.WaitFor(t, "two nodes again", ok(2))

	if code := w.Stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("watch: exit %d after Ctrl-C, want 0", code)
	}
	if code := srv.Stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("serve: exit %d after SIGTERM, want 0; stderr:\n%s", code, srv.Stderr.All())
	}
}

func setTaints(t *testing.T, env *testcluster.Env, node string, taints ...corev1.Taint) {
	t.Helper()
	if taints == nil {
		taints = []corev1.Taint{}
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	if _, err := env.Client.CoreV1().Nodes().Patch(context.Background(), node, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// setMemory sets the node's memory capacity: its running pods stay, a new
// one that does not fit stays Pending.
func setMemory(t *testing.T, env *testcluster.Env, node, quantity string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{
		"capacity": map[string]string{"memory": quantity}, "allocatable": map[string]string{"memory": quantity}}})
	if _, err := env.Client.CoreV1().Nodes().PatchStatus(context.Background(), node, patch); err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, env *testcluster.Env, node string, o operand.Operand) {
	t.Helper()
	pods := env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		return slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Labels["app"] == o.DaemonSet && testcluster.PodRunningOn(&p, node) })
	})
	for _, p := range pods {
		if p.Labels["app"] == o.DaemonSet && p.Spec.NodeName == node {
			if err := env.Client.CoreV1().Pods(env.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// waitForEvents watches the node's Events from gpuops until there is one of
// each reason.
func waitForEvents(t *testing.T, env *testcluster.Env, node string, reasons ...string) {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": node, "source": "gpuops"}.AsSelector()
	lw := cache.NewListWatchFromClient(env.Client.CoreV1().RESTClient(), "events", metav1.NamespaceDefault, sel)
	have := func(events []corev1.Event) []string {
		var out []string
		for _, e := range events {
			out = append(out, e.Reason)
		}
		return out
	}
	testcluster.WaitFor(t, env, "events "+strings.Join(reasons, ", ")+" of node "+node, lw, &corev1.Event{},
		func(events []corev1.Event) bool {
			return !slices.ContainsFunc(reasons, func(r string) bool { return !slices.Contains(have(events), r) })
		},
		func(events []corev1.Event) string { return fmt.Sprintf("node %s has events %q", node, have(events)) })
}
