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
		return testcluster.RunningOn(pods, labelled) == 1
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

// TestPodReadyAgain: a running pod marked not Ready, as the node lifecycle
// controller marks the pods of a node whose heartbeats came late, is Ready
// again soon after, as a kubelet would make it (hack/kwokctl.yaml's stage).
func TestPodReadyAgain(t *testing.T) {
	t.Parallel()
	env := testcluster.New(t)
	node := env.AddNode(t, env.NodeName("a"), nil).Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: env.Namespace},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}},
	}
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func(pods []corev1.Pod) bool {
		if len(pods) != 1 || pods[0].Status.Phase != corev1.PodRunning {
			return false
		}
		for _, c := range pods[0].Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	p := env.WaitForPods(t, env.Namespace, ready)[0]
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	notReady, err := env.Client.CoreV1().Pods(env.Namespace).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		return ready(pods) && pods[0].ResourceVersion != notReady.ResourceVersion
	})
}
