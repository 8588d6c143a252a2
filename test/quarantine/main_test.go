// Package quarantine_test runs gpuops serve --quarantine against a real
// control plane (KWOK nodes, the DaemonSet controller and the scheduler)
// and breaks nodes under it as the lab does: a device plugin without the
// container toolkit. It checks what the quarantine does and, mostly, what
// it never does. It stops the API server, so it runs on a cluster of its
// own.
package quarantine_test

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
const patience = 90 * time.Second

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

// server is gpuops serve in the background, its stderr kept.
type server struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	lines  []string
	done   chan struct{}
	killed bool
}

var serving = regexp.MustCompile(`serving (http://\S+)/metrics`)

// serve starts gpuops serve on the fleet's nodes with the extra args.
func (f *fleet) serve(t *testing.T, args ...string) *server {
	t.Helper()
	all := append([]string{"serve", "--listen", "127.0.0.1:0", "-l", testcluster.LabelTestID + "=" + f.env.ID}, args...)
	s := &server{cmd: f.c.Command(t, all...), done: make(chan struct{})}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("serve %q said:\n%s", args, strings.Join(s.stderr(), "\n"))
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.lines = append(s.lines, sc.Text())
			s.mu.Unlock()
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	select {
	case s.url = <-urls:
	case <-time.After(patience):
		t.Fatalf("serve did not say where it serves: %q", s.stderr())
	}
	s.waitFor(t, "ready", func(m metrics) bool { return m.has("gpuops_nodes", nil) })
	return s
}

func (s *server) kill() {
	if !s.killed {
		s.killed = true
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *server) stderr() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// metrics are one scrape, by name.
type metrics map[string][]*model.Sample

func (s *server) scrape(t *testing.T) metrics {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		return nil // not up yet, or stopped
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	dec := expfmt.SampleDecoder{Dec: expfmt.NewDecoder(strings.NewReader(string(body)), expfmt.NewFormat(expfmt.TypeTextPlain)), Opts: &expfmt.DecodeOptions{}}
	out := metrics{}
	for {
		var v model.Vector
		if err := dec.Decode(&v); err != nil {
			break
		}
		for _, sm := range v {
			name := string(sm.Metric[model.MetricNameLabel])
			out[name] = append(out[name], sm)
		}
	}
	return out
}

// value is the value of the series of name with these labels (a subset);
// false when there is none.
func (m metrics) value(name string, labels map[string]string) (float64, bool) {
	for _, s := range m[name] {
		match := true
		for k, v := range labels {
			match = match && string(s.Metric[model.LabelName(k)]) == v
		}
		if match {
			return float64(s.Value), true
		}
	}
	return 0, false
}

func (m metrics) has(name string, labels map[string]string) bool {
	_, ok := m.value(name, labels)
	return ok
}

// nodes are the values of label node of the series of name with value 1.
func (m metrics) nodes(name string) []string {
	var out []string
	for _, s := range m[name] {
		if s.Value == 1 {
			out = append(out, string(s.Metric["node"]))
		}
	}
	slices.Sort(out)
	return out
}

func (s *server) waitFor(t *testing.T, what string, cond func(metrics) bool) metrics {
	t.Helper()
	var last metrics
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, patience, true, func(context.Context) (bool, error) {
		last = s.scrape(t)
		return last != nil && cond(last), nil
	})
	if err != nil {
		t.Fatalf("serve: no %s within %s; stderr:\n%s", what, patience, strings.Join(s.stderr(), "\n"))
	}
	return last
}

// waitSaid waits until serve has logged a line that starts with prefix.
func (s *server) waitSaid(t *testing.T, prefix string) {
	t.Helper()
	said := func(l string) bool { return strings.HasPrefix(l, prefix) }
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, patience, true, func(context.Context) (bool, error) {
		return slices.ContainsFunc(s.stderr(), said), nil
	})
	if err != nil {
		t.Fatalf("serve never said %q; it said:\n%s", prefix, strings.Join(s.stderr(), "\n"))
	}
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
