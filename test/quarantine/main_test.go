// Package quarantine_test runs gpuops serve --quarantine against a real
// control plane (KWOK nodes, the DaemonSet controller and the scheduler)
// and breaks nodes under it as the lab does: a device plugin without the
// container toolkit. It checks what the quarantine does and, mostly, what
// it never does. It stops the API server, so it runs on a cluster of its
// own.
package quarantine_test

import (
	"context"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestMain(m *testing.M) {
	os.Unsetenv(testcluster.EnvKubeconfig) // never a shared cluster: the API server is stopped
	testcluster.Main(m)
}

// patience bounds each wait for the cluster and gpuops to get somewhere.
const patience = gpuopstest.Patience

// fleet is a namespace with the lab's five operand DaemonSets: the
// test's own, or one it names.
type fleet struct {
	env *testcluster.Env
	ns  string
	c   gpuopstest.Cluster
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	env := testcluster.New(t)
	env.Timeout = patience
	return newFleetIn(t, env, env.Namespace)
}

func newFleetIn(t *testing.T, env *testcluster.Env, ns string) *fleet {
	t.Helper()
	for _, o := range operand.Lab {
		ds := testcluster.DaemonSet(ns, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "64Mi")
		if _, err := env.Client.AppsV1().DaemonSets(ns).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &fleet{env: env, ns: ns, c: gpuopstest.Cluster{Kubeconfig: env.Kubeconfig, Namespace: ns}}
}

// node adds a GPU node asking for every operand of the lab; broken, it
// asks for the device plugin without the container toolkit (the lab's
// step 7, on a node with GPUs: the black hole).
func (f *fleet) node(t *testing.T, suffix string, broken bool, opts ...testcluster.NodeOption) string {
	t.Helper()
	labels := map[string]string{}
	for _, o := range operand.Lab {
		labels[o.LabelKey()] = "true"
	}
	if broken {
		labels[operand.Lab.ContainerToolkit().LabelKey()] = ""
	}
	name := f.env.NodeName(suffix)
	// Its GPUs advertised, as a device plugin registers them: the broken
	// one too (the scheduler sends GPU work there).
	gpus := testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: resource.MustParse("8")})
	n := f.env.AddNode(t, name, labels, append(opts, gpus)...)
	want := len(operand.Lab)
	switch {
	case len(n.Spec.Taints) > 0:
		return name // the lab's DaemonSets tolerate no taint: no pod comes
	case broken:
		want--
	}
	f.env.WaitForPods(t, f.ns, func(pods []corev1.Pod) bool { return testcluster.RunningOn(pods, name) == want })
	return name
}

// repair asks for the toolkit on the node, and waits until its pod runs.
func (f *fleet) repair(t *testing.T, node string) {
	t.Helper()
	f.env.LabelNode(t, node, operand.Lab.ContainerToolkit().LabelKey(), "true")
	f.env.WaitForPods(t, f.ns, func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if testcluster.PodRunningOn(&p, node) && strings.HasPrefix(p.Name, operand.Lab.ContainerToolkit().DaemonSet) {
				return true
			}
		}
		return false
	})
}

// get reads the node.
func (f *fleet) get(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := f.env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// quarantined reports whether gpuops's quarantine holds the node: cordoned,
// with its record.
func quarantined(n *corev1.Node) bool {
	_, rec := n.Annotations[operand.QuarantineAnnotation]
	return n.Spec.Unschedulable && rec
}

// free reports whether the node is in service and without gpuops's record.
func free(n *corev1.Node) bool {
	_, rec := n.Annotations[operand.QuarantineAnnotation]
	return !n.Spec.Unschedulable && !rec
}

// untouched is what a test compares of a node gpuops must not touch: its
// spec, labels and annotations (the simulated kubelet's heartbeats move its
// resourceVersion).
type untouched struct {
	spec        corev1.NodeSpec
	labels, ann map[string]string
}

func stateOf(n *corev1.Node) untouched {
	return untouched{n.Spec, n.Labels, n.Annotations}
}

func (u untouched) equal(v untouched) bool {
	return reflect.DeepEqual(u.spec, v.spec) && maps.Equal(u.labels, v.labels) && maps.Equal(u.ann, v.ann)
}

// serve starts gpuops serve on the fleet's nodes with the extra args, and
// waits for its first verdict.
func (f *fleet) serve(t *testing.T, args ...string) *gpuopstest.Server {
	t.Helper()
	s := f.c.Serve(t, append([]string{"serve", "-l", testcluster.LabelTestID + "=" + f.env.ID}, args...)...)
	s.WaitFor(t, "ready", func(m gpuopstest.Scrape) bool { return m.HasSeries("gpuops_nodes", nil) })
	return s
}

// waitNode waits until the node is as check wants.
func (f *fleet) waitNode(t *testing.T, name string, check func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	return f.env.WaitForNode(t, name, check)
}

// holds checks, for d, that cond stays true of every named node.
func (f *fleet) holds(t *testing.T, d time.Duration, what string, cond func(*corev1.Node) bool, names ...string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, n := range names {
			if got := f.get(t, n); !cond(got) {
				t.Fatalf("%s: node %s: spec %+v annotations %v", what, n, got.Spec, got.Annotations)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitEvent waits for an Event of this reason on the node (it is written
// after the node).
func (f *fleet) waitEvent(t *testing.T, node, reason string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, patience, true, func(context.Context) (bool, error) {
		return slices.Contains(f.events(t, node), reason), nil
	})
	if err != nil {
		t.Errorf("no %s Event on %s: %v", reason, node, f.events(t, node))
	}
}

// events are the reasons of the Events on the node.
func (f *fleet) events(t *testing.T, node string) []string {
	t.Helper()
	list, err := f.env.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason)
	}
	return out
}

// written is what gpuops may write on the fleet's behalf: the nodes' spec,
// labels and annotations, the namespace's Leases and ConfigMaps (the
// quarantine's Lease and fuse), by name and resourceVersion, and the
// Events gpuops recorded on the nodes (namespace default).
type written struct {
	nodes              map[string]untouched
	leases, configMaps map[string]string
	events             []string
}

func (f *fleet) written(t *testing.T, nodes ...string) written {
	t.Helper()
	ctx := context.Background()
	w := written{nodes: map[string]untouched{}, leases: map[string]string{}, configMaps: map[string]string{}}
	for _, n := range nodes {
		w.nodes[n] = stateOf(f.get(t, n))
	}
	leases, err := f.env.Client.CoordinationV1().Leases(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		w.leases[l.Name] = l.ResourceVersion
	}
	cms, err := f.env.Client.CoreV1().ConfigMaps(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		w.configMaps[c.Name] = c.ResourceVersion
	}
	events, err := f.env.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		// The node lifecycle controller records its own (RegisteredNode)
		// whenever it gets to a new node: only gpuops's count.
		if e.Source.Component == "gpuops" && slices.Contains(nodes, e.InvolvedObject.Name) {
			w.events = append(w.events, e.InvolvedObject.Name+" "+e.Reason)
		}
	}
	slices.Sort(w.events)
	return w
}

// unchanged fails the test unless w is what was written before.
func (w written) unchanged(t *testing.T, before written) {
	t.Helper()
	for n, u := range before.nodes {
		if !u.equal(w.nodes[n]) {
			t.Errorf("node %s changed: spec %+v labels %v annotations %v; was spec %+v labels %v annotations %v",
				n, w.nodes[n].spec, w.nodes[n].labels, w.nodes[n].ann, u.spec, u.labels, u.ann)
		}
	}
	if !maps.Equal(w.leases, before.leases) {
		t.Errorf("Leases %v; were %v", w.leases, before.leases)
	}
	if !maps.Equal(w.configMaps, before.configMaps) {
		t.Errorf("ConfigMaps %v; were %v", w.configMaps, before.configMaps)
	}
	if !slices.Equal(w.events, before.events) {
		t.Errorf("gpuops's Events %q; were %q", w.events, before.events)
	}
}
