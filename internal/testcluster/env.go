package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// LabelTestID is set on the namespace and nodes a test creates, with the
// test's Env.ID as value.
const LabelTestID = "gpuops.test/id"

// DefaultTimeout bounds each wait of an Env unless Env.Timeout is set.
const DefaultTimeout = 60 * time.Second

// Env is one test's view of the cluster: its own namespace and ID.
type Env struct {
	Kubeconfig string // path of a kubeconfig for the cluster
	RESTConfig *rest.Config
	Client     kubernetes.Interface
	Namespace  string        // created for this test, deleted in t.Cleanup
	ID         string        // short, unique, DNS-1123-safe
	Timeout    time.Duration // bound of each Wait*; DefaultTimeout if zero
}

// New returns an Env with a fresh namespace, deleted when the test ends. It
// starts the package's cluster on first use and fails the test if there is
// none.
func New(t testing.TB) *Env {
	t.Helper()
	return newEnv(t, get(t))
}

// NewSecond is New on a second cluster of this test binary, for tests of
// one run across clusters: started on first use (never the
// GPUOPS_TEST_KUBECONFIG one) and deleted when Main ends, like the first.
func NewSecond(t testing.TB) *Env {
	t.Helper()
	get(t)
	secondOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			secondErr = err
			return
		}
		second, secondErr = launch(root, clusterName(), nil)
	})
	if secondErr != nil {
		t.Fatalf("testcluster: no second cluster: %v", secondErr)
	}
	return newEnv(t, second)
}

func newEnv(t testing.TB, c *cluster) *Env {
	t.Helper()
	e := &Env{
		Kubeconfig: c.kubeconfig,
		RESTConfig: rest.CopyConfig(c.restConfig),
		Client:     c.client,
		ID:         randomID(6),
	}
	e.Namespace = "t-" + e.ID
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   e.Namespace,
		Labels: map[string]string{LabelTestID: e.ID},
	}}
	ctx := context.Background()
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testcluster: create namespace %s: %v", e.Namespace, err)
	}
	t.Cleanup(func() {
		err := e.Client.CoreV1().Namespaces().Delete(context.Background(), e.Namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testcluster: delete namespace %s: %v", e.Namespace, err)
		}
	})
	// Runs before the namespace goes (cleanups run last first): a test that
	// failed on the cluster's state shows its pods as they were, those of
	// its namespace and those on its nodes (NodeName) in any namespace.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		pods, err := e.Client.CoreV1().Pods(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Logf("testcluster: pods of %s at the failure: %v", e.ID, err)
			return
		}
		mine := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
			return p.Namespace != e.Namespace && !strings.HasPrefix(p.Spec.NodeName, e.NodeName(""))
		})
		t.Logf("testcluster: pods of %s (its namespace, its nodes) at the failure:%s", e.ID, describePods(mine))
		// A pod left Pending on a KWOK node is the simulator's or the
		// scheduler's doing: their own words on the test's objects (its
		// nodes and namespace are named after its ID, and its pods).
		said := func(l string) bool {
			return strings.Contains(l, e.ID) || slices.ContainsFunc(mine, func(p corev1.Pod) bool { return strings.Contains(l, p.Namespace+"/"+p.Name) })
		}
		for _, component := range []string{"kwok-controller", "kube-scheduler"} {
			if lines := tail(c.componentLog(component), 20, said); lines != "" {
				t.Logf("testcluster: %s's last lines on them:\n%s", component, lines)
			}
		}
	})
	return e
}

// NodeName returns a node name unique to this test: t-<ID>-<suffix>.
func (e *Env) NodeName(suffix string) string {
	return "t-" + e.ID + "-" + suffix
}

func (e *Env) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return DefaultTimeout
}

// NodeOption changes the node AddNode creates.
type NodeOption func(*corev1.Node)

// WithTaints adds taints to the node.
func WithTaints(taints ...corev1.Taint) NodeOption {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taints...) }
}

// WithCapacity sets capacity and allocatable of the given resources.
func WithCapacity(list corev1.ResourceList) NodeOption {
	return func(n *corev1.Node) {
		for k, v := range list {
			n.Status.Capacity[k] = v
			n.Status.Allocatable[k] = v
		}
	}
}

// WithMemory sets the node's memory capacity and allocatable, e.g. "1Gi".
func WithMemory(quantity string) NodeOption {
	return WithCapacity(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(quantity)})
}

// Unschedulable cordons the node (spec.unschedulable). It is still Ready and
// KWOK still runs its pods; DaemonSet pods tolerate the cordon.
func Unschedulable() NodeOption {
	return func(n *corev1.Node) { n.Spec.Unschedulable = true }
}

// NotReady makes a node that KWOK does not manage: its Ready condition is
// False and pods bound to it stay Pending, as on a node whose kubelet is
// down.
func NotReady() NodeOption {
	return func(n *corev1.Node) {
		delete(n.Annotations, "kwok.x-k8s.io/node")
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionFalse,
			Reason:             "KubeletNotReady",
			Message:            "testcluster: node created NotReady",
			LastHeartbeatTime:  now,
			LastTransitionTime: now,
		}}
	}
}

// FakeNode returns a KWOK fake node: Ready once KWOK sees it, with cpu 32,
// memory 256Gi and 110 pods, no taint, and the given labels.
func FakeNode(name string, labels map[string]string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
		},
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	return n
}

// AddNode creates a KWOK fake node (see FakeNode), labelled with
// LabelTestID too, and deletes it when the test ends. Unless NotReady is
// given, it waits until the node is Ready and the node lifecycle controller
// has removed its initial node.kubernetes.io/not-ready taint.
func (e *Env) AddNode(t testing.TB, name string, labels map[string]string, opts ...NodeOption) *corev1.Node {
	t.Helper()
	n := FakeNode(name, labels)
	n.Labels[LabelTestID] = e.ID
	for _, o := range opts {
		o(n)
	}
	ctx := context.Background()
	created, err := e.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testcluster: create node %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := e.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testcluster: delete node %s: %v", name, err)
		}
	})
	if _, managed := n.Annotations["kwok.x-k8s.io/node"]; !managed {
		return created
	}
	return e.WaitForNode(t, name, func(n *corev1.Node) bool {
		if !NodeReady(n) {
			return false
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				return false
			}
		}
		return true
	})
}

// LabelNode sets one label on a node.
func (e *Env) LabelNode(t testing.TB, name, key, value string) {
	t.Helper()
	e.patchNodeLabels(t, name, map[string]any{key: value})
}

// UnlabelNode removes one label from a node.
func (e *Env) UnlabelNode(t testing.TB, name, key string) {
	t.Helper()
	e.patchNodeLabels(t, name, map[string]any{key: nil})
}

func (e *Env) patchNodeLabels(t testing.TB, name string, labels map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Client.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("testcluster: label node %s: %v", name, err)
	}
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodRunningOn reports whether the pod is bound to node, Running and not
// being deleted.
func PodRunningOn(p *corev1.Pod, node string) bool {
	return p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

// RunningOn counts the pods bound to node that are Running and not being
// deleted: what the judges count as present. A pod only bound is not yet.
func RunningOn(pods []corev1.Pod, node string) int {
	n := 0
	for i := range pods {
		if PodRunningOn(&pods[i], node) {
			n++
		}
	}
	return n
}

// PodsOn returns the pods bound to node.
func PodsOn(pods []corev1.Pod, node string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "no pods"
	}
	s := ""
	for _, p := range pods {
		del := ""
		if p.DeletionTimestamp != nil {
			del = " (deleting)"
		}
		why := ""
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				why += fmt.Sprintf(" %s=%s: %s", c.Type, c.Status, c.Message)
			}
		}
		s += fmt.Sprintf("\n  %s node=%q phase=%s%s%s", p.Name, p.Spec.NodeName, p.Status.Phase, del, why)
	}
	return s
}
