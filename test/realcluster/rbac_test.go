package realcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

// The judges work with only the shipped read-only RBAC (kustomize/rbac/judge);
// up with it stops before changing anything, with one line naming what it needs.
func TestLeastPrivilege(t *testing.T) {
	env := testcluster.New(t)
	suffix := "-" + env.ID // ClusterRole and ClusterRoleBinding are cluster-wide
	create(t, env, kustomize(t, "kustomize/rbac/judge", "namespace: "+env.Namespace+"\nnameSuffix: "+suffix))
	asJudge := gpuopstest.Cluster{Kubeconfig: env.AccountKubeconfig(t, env.Namespace, "gpuops-judge"+suffix), Namespace: env.Namespace}

	toolkit, plugin := operand.Lab.ContainerToolkit(), operand.Lab.DevicePlugin()
	full := env.NodeName("full")
	bare := env.NodeName("bare")
	env.AddNode(t, full, map[string]string{toolkit.LabelKey(): "true", plugin.LabelKey(): "true"})
	env.AddNode(t, bare, map[string]string{plugin.LabelKey(): "true"})
	create(t, env, operands(t, env))
	// Running, not only bound: the judges below must find every pod present.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		return testcluster.RunningOn(pods, full) == 2 && testcluster.RunningOn(pods, bare) == 1
	})

	// A GPU pod no node can take: the workload's side reads every pod,
	// claim and device class as the judge (no note: nothing it may not list).
	train := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:1",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(context.Background(), train, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns, sel := env.Namespace, selector(env)
	for _, tc := range []struct {
		args []string
		code int
		out  string
		err  string // all of stderr
	}{
		{[]string{"audit", "-l", sel}, 0, fmt.Sprintf("%s OK\n%s OK\n", bare, full), ""},
		{[]string{"audit", "-l", sel, "--explain", "--discover"}, 0, fmt.Sprintf("%s OK\n%s OK\n", bare, full),
			"note: no ClusterPolicy: the cluster does not serve clusterpolicies.nvidia.com\n"},
		{[]string{"audit", "-l", sel, "-o", "json"}, 0, `"ok": true`, ""},
		{[]string{"order-check", full}, 0, "ok\n", ""},
		{[]string{"order-check", "--all-rules", "--discover", bare}, 1, "device-plugin-without-toolkit\n", ""},
		{[]string{"matrix", "-l", sel}, 0, fmt.Sprintf(
			"%s driver=no toolkit=no device-plugin=yes gfd=no dcgm=no\n%s driver=no toolkit=yes device-plugin=yes gfd=no dcgm=no\nTOTAL_PODS=3\n", bare, full), ""},
		// A table is for a person: the notes come with it, as with --explain.
		{[]string{"matrix", "-l", sel, "--discover", "-o", "table"}, 0, "DEVICE-PLUGIN",
			"note: no ClusterPolicy: the cluster does not serve clusterpolicies.nvidia.com\n"},
		{[]string{"capacity", "-l", sel}, 0, "(none) nodes=2 physical=0\n", ""},
		// -n is the pods' namespace for why and pods; the operator's is its own flag.
		{[]string{"why", "train", "--stuck-after", "1ns", "--operator-namespace", ns}, 1, ns + "/train Pending resource-not-offered no node offers nvidia.com/gpu", ""},
		{[]string{"pods", "--stuck-after", "1ns", "--operator-namespace", ns}, 1, "resource-not-offered: 1\n  " + ns + "/train Pending", ""},
	} {
		r := asJudge.Run(t, tc.args...)
		if r.Code != tc.code || !strings.Contains(r.Stdout, tc.out) || r.Stderr != tc.err {
			t.Errorf("gpuops %s as the judge: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr %q",
				strings.Join(tc.args, " "), r.Code, r.Stdout, r.Stderr, tc.code, tc.out, tc.err)
		}
	}

	asJudge.WantError(t, `pod "nope" not found in namespace `+ns, "why", "nope", "--operator-namespace", ns)

	// up as the judge: refused before anything is written, here or in the cluster.
	work := t.TempDir()
	spec := filepath.Join(t.TempDir(), "lab.yaml")
	gpuopstest.WriteFile(t, spec, fmt.Sprintf("namespace: %s\nnodes:\n- name: %s\n  operands: {driver: true}\n- name: %s\n  operands: {driver: false}\n", ns, full, bare))
	before := clusterState(t, env, full, bare)
	r := asJudge.Run(t, "up", "--lab", spec, "--workdir", work)
	r.OneLineError(t, "forbidden: needs ")
	want := "error: forbidden: needs get namespaces; get,watch,patch nodes; get,watch,create,patch daemonsets.apps in namespace " + ns +
		"; watch pods in namespace " + ns + "\n"
	if r.Stderr != want {
		t.Errorf("up as the judge: %q, want %q", r.Stderr, want)
	}
	// optout and reset need other rights, and are refused as well.
	asJudge.WantError(t, "forbidden: needs get,watch,patch nodes; get,watch daemonsets.apps in namespace "+ns+"; watch pods in namespace "+ns,
		"optout", "--workdir", work, full, "driver")
	asJudge.WantError(t, "forbidden: needs get namespaces; patch nodes; delete daemonsets.apps in namespace "+ns, "reset")
	if after := clusterState(t, env, full, bare); !reflect.DeepEqual(before, after) {
		t.Errorf("up as the judge changed the cluster:\nbefore %v\nafter  %v", before, after)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("up as the judge wrote into the workspace: %v", entries)
	}
}

// clusterState is what up would change: the nodes' labels, the namespace's
// DaemonSets (name → generation) and the namespace itself.
func clusterState(t *testing.T, env *testcluster.Env, nodes ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	state := map[string]string{}
	for _, n := range nodes {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		state["node/"+n] = fmt.Sprint(node.Labels)
	}
	dss, err := env.Client.AppsV1().DaemonSets(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dss.Items {
		state["daemonset/"+d.Name] = fmt.Sprint(d.Generation, d.Labels, d.Spec.Template.Spec.NodeSelector)
	}
	ns, err := env.Client.CoreV1().Namespaces().Get(ctx, env.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state["namespace"] = fmt.Sprint(ns.Labels, ns.Annotations)
	return state
}
