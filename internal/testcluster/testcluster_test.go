package testcluster_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

func runningOn(pods []corev1.Pod, node string) int {
	n := 0
	for i := range pods {
		if testcluster.PodRunningOn(&pods[i], node) {
			n++
		}
	}
	return n
}

// TestDaemonSetFollowsNodeLabel proves the stack end to end: a DaemonSet
// lands on the labelled KWOK node only, and leaves when the label goes.
//
// The selector's value is the test's ID, so other tests' nodes (which may
// carry example.com/deploy=true) never match and the test may run in
// parallel.
func TestDaemonSetFollowsNodeLabel(t *testing.T) {
	t.Parallel()
	env := testcluster.New(t)
	const key = "example.com/deploy"
	labelled := env.AddNode(t, env.NodeName("a"), nil).Name
	other := env.AddNode(t, env.NodeName("b"), map[string]string{key: "false"}).Name

	ds := testcluster.DaemonSet(env.Namespace, "example", map[string]string{key: "true-" + env.ID}, "128Mi")
	if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Nothing matches yet.
	env.WaitForDaemonSet(t, env.Namespace, "example", func(ds *appsv1.DaemonSet) bool {
		return ds.Status.ObservedGeneration == ds.Generation && ds.Status.DesiredNumberScheduled == 0
	})

	env.LabelNode(t, labelled, key, "true-"+env.ID)
	pods := env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		return runningOn(pods, labelled) == 1
	})
	if len(pods) != 1 || len(testcluster.PodsOn(pods, other)) != 0 {
		t.Fatalf("want exactly one pod, on %s; got %d pods, %d on %s", labelled, len(pods), len(testcluster.PodsOn(pods, other)), other)
	}
	env.WaitForDaemonSet(t, env.Namespace, "example", func(ds *appsv1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 1 && ds.Status.NumberReady == 1
	})

	env.UnlabelNode(t, labelled, key)
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool { return len(pods) == 0 })
	env.WaitForDaemonSet(t, env.Namespace, "example", func(ds *appsv1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 0
	})
}

// TestNodeOptions checks the node shapes tests rely on.
func TestNodeOptions(t *testing.T) {
	t.Parallel()
	env := testcluster.New(t)
	taint := corev1.Taint{Key: "example.com/broken", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	n := env.AddNode(t, env.NodeName("tainted"), nil, testcluster.WithTaints(taint), testcluster.WithMemory("1Gi"))
	if !testcluster.NodeReady(n) {
		t.Errorf("%s: want Ready", n.Name)
	}
	if got := n.Status.Allocatable.Memory().String(); got != "1Gi" {
		t.Errorf("%s: allocatable memory %s, want 1Gi", n.Name, got)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != taint.Key {
		t.Errorf("%s: taints %v, want %v", n.Name, n.Spec.Taints, taint)
	}
	nr := env.AddNode(t, env.NodeName("down"), nil, testcluster.NotReady())
	if testcluster.NodeReady(nr) {
		t.Errorf("%s: want NotReady", nr.Name)
	}
	c := env.AddNode(t, env.NodeName("cordoned"), nil, testcluster.Unschedulable())
	if !c.Spec.Unschedulable || !testcluster.NodeReady(c) {
		t.Errorf("%s: want Ready and unschedulable", c.Name)
	}
}
