package testcluster

import (
	"context"
	"fmt"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// WaitFor lists and watches with lw until check, called with the current
// objects after the initial list and after every change, returns true. It
// fails the test after the Env's timeout, with describe's view of the last
// state. No polling: the wait is driven by the watch.
func WaitFor[T any](t testing.TB, e *Env, what string, lw cache.ListerWatcher, obj runtime.Object,
	check func([]T) bool, describe func([]T) string) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout())
	defer cancel()
	var store cache.Store
	var last []T
	eval := func() bool {
		last = last[:0]
		for _, o := range store.List() {
			last = append(last, *any(o).(*T))
		}
		return check(last)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, obj,
		func(s cache.Store) (bool, error) { store = s; return eval(), nil },
		func(watch.Event) (bool, error) { return eval(), nil })
	if err != nil {
		state := "nothing listed"
		if store != nil {
			state = describe(last)
		}
		t.Fatalf("testcluster: waiting for %s: %v; last state: %s", what, err, state)
	}
	return last
}

// WaitForPods waits until check, given all pods of namespace ns (sorted by
// name), returns true; it returns those pods.
func (e *Env) WaitForPods(t testing.TB, ns string, check func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	lw := cache.NewListWatchFromClient(e.Client.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	return WaitFor(t, e, "pods in "+ns, lw, &corev1.Pod{}, func(pods []corev1.Pod) bool {
		sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
		return check(pods)
	}, describePods)
}

// Unscheduled waits until the scheduler has said why it cannot place the
// pod of the env's namespace (its PodScheduled condition False, with a
// message), and returns what it said.
func (e *Env) Unscheduled(t testing.TB, name string) string {
	t.Helper()
	var said string
	e.WaitForPods(t, e.Namespace, func(pods []corev1.Pod) bool {
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if p.Name == name && c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
					said = c.Message
					return true
				}
			}
		}
		return false
	})
	return said
}

// WaitForNode waits until check returns true for the named node.
func (e *Env) WaitForNode(t testing.TB, name string, check func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	lw := cache.NewListWatchFromClient(e.Client.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll,
		fields.OneTermEqualSelector("metadata.name", name))
	nodes := WaitFor(t, e, "node "+name, lw, &corev1.Node{}, func(nodes []corev1.Node) bool {
		return len(nodes) == 1 && check(&nodes[0])
	}, func(nodes []corev1.Node) string {
		if len(nodes) == 0 {
			return "node not found"
		}
		return fmt.Sprintf("conditions %v, labels %v", nodes[0].Status.Conditions, nodes[0].Labels)
	})
	return &nodes[0]
}

// WaitForDaemonSet waits until check returns true for the named DaemonSet.
func (e *Env) WaitForDaemonSet(t testing.TB, ns, name string, check func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	lw := cache.NewListWatchFromClient(e.Client.AppsV1().RESTClient(), "daemonsets", ns,
		fields.OneTermEqualSelector("metadata.name", name))
	dss := WaitFor(t, e, "DaemonSet "+ns+"/"+name, lw, &appsv1.DaemonSet{}, func(dss []appsv1.DaemonSet) bool {
		return len(dss) == 1 && check(&dss[0])
	}, func(dss []appsv1.DaemonSet) string {
		if len(dss) == 0 {
			return "DaemonSet not found"
		}
		return fmt.Sprintf("status %+v", dss[0].Status)
	})
	return &dss[0]
}
