package realcluster_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

// audit --explain on real objects: the scheduler's own message for a pod
// that does not fit, the taint that keeps a DaemonSet off, a NotReady node,
// a DaemonSet that is gone, and a label value that is not 'true'.
func TestExplainOnTheControlPlane(t *testing.T) {
	env := testcluster.New(t)
	plugin, dcgm := operand.Lab.DevicePlugin(), operand.Lab.DCGMExporter()
	asks := map[string]string{plugin.LabelKey(): "true"}
	starved, tainted, down, capital := env.NodeName("starved"), env.NodeName("tainted"), env.NodeName("down"), env.NodeName("capital")
	env.AddNode(t, starved, asks, testcluster.WithMemory("64Mi"))
	env.AddNode(t, tainted, asks, testcluster.WithTaints(corev1.Taint{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}))
	env.AddNode(t, down, asks, testcluster.NotReady())
	env.AddNode(t, capital, map[string]string{plugin.LabelKey(): "True", dcgm.LabelKey(): "true"})
	create(t, env, operands(t, env))
	if err := env.Client.AppsV1().DaemonSets(env.Namespace).Delete(context.Background(), dcgm.DaemonSet, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && strings.Contains(c.Message, "Insufficient memory") {
					return true
				}
			}
		}
		return false
	})

	r := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace}.Run(t, "audit", "--explain", "-l", selector(env))
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	want := [][]string{
		{capital + " MISSING dcgm-exporter (no DaemonSet nvidia-dcgm-exporter in namespace " + env.Namespace + ")"},
		{capital + " WARNING nvidia.com/gpu.deploy.device-plugin (label is 'True', not 'true': the DaemonSet will not run here)"},
		{down + " MISSING device-plugin (node is NotReady: its pods cannot start; DaemonSet nvidia-device-plugin-daemonset does not tolerate the node's taint node.kubernetes.io/not-ready:NoSchedule)"},
		{starved + " MISSING device-plugin (pod nvidia-device-plugin-daemonset-", " is Pending, not scheduled: 0/", "Insufficient memory"},
		{tainted + " MISSING device-plugin (DaemonSet nvidia-device-plugin-daemonset does not tolerate the node's taint example.com/broken:NoSchedule)"},
	}
	if r.Code != 1 || len(lines) != len(want) {
		t.Fatalf("audit --explain: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for i, parts := range want {
		for _, p := range parts {
			if !strings.Contains(lines[i], p) {
				t.Errorf("line %d %q lacks %q", i, lines[i], p)
			}
		}
	}
}
