package read_test

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// jsonClient is a client of the test's cluster that speaks JSON alone, as
// a plain client would: the reference the fast read is held to.
func jsonClient(env *testcluster.Env) kubernetes.Interface {
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	return kubernetes.NewForConfigOrDie(cfg)
}

// plainRead is the reference: one unpaged JSON LIST per resource, converted
// after the whole list has arrived.
func plainRead(t *testing.T, c kubernetes.Interface, ns string, opts read.Options) *snapshot.Snapshot {
	t.Helper()
	ctx := context.Background()
	s := &snapshot.Snapshot{Namespace: ns}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: opts.NodeSelector})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		n := snapshot.NodeFrom(&nodes.Items[i])
		if !opts.DeployLabelsOnly { // a read of whole nodes says who cordoned and tainted them
			n.TraceSpec(nodes.Items[i].ManagedFields)
		}
		s.Nodes = append(s.Nodes, n)
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		s.Pods = append(s.Pods, snapshot.PodFrom(&pods.Items[i]))
	}
	dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range dss.Items {
		s.DaemonSets = append(s.DaemonSets, snapshot.DaemonSetFrom(&dss.Items[i]))
	}
	return s
}

// TestReadMatchesPlainList proves that the fast read (protobuf, streamed,
// trimmed, concurrent) yields exactly the snapshot of a plain JSON list, over
// nodes and pods in every state a judge distinguishes; so does it in pages
// small enough that every list spans several, and with a JSON client.
func TestReadMatchesPlainList(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()
	// The DaemonSet's selector value is the test's ID: no other test's node matches.
	deploy := map[string]string{"example.com/deploy": env.ID, "example.com/zone": "a"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		env.AddNode(t, env.NodeName(n), deploy)
	}
	env.AddNode(t, env.NodeName("tainted"), deploy, testcluster.WithTaints(corev1.Taint{
		Key: "example.com/broken", Value: "yes", Effect: corev1.TaintEffectNoSchedule,
	}))
	env.AddNode(t, env.NodeName("small"), deploy, testcluster.WithMemory("256Mi"))
	env.AddNode(t, env.NodeName("cordoned"), nil, testcluster.Unschedulable())
	env.AddNode(t, env.NodeName("down"), nil, testcluster.NotReady())
	// A GPU node whose device plugin reports one GPU unhealthy, and MIG
	// devices: the counts the health judge reads from the status.
	env.AddNode(t, env.NodeName("gpus"), nil, testcluster.WithCapacity(corev1.ResourceList{
		"nvidia.com/gpu": resource.MustParse("8"), "nvidia.com/mig-1g.10gb": resource.MustParse("7"),
	}), func(n *corev1.Node) { n.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("7") })

	selector := map[string]string{"example.com/deploy": env.ID}
	// The read lists pods in parts by their app label (podparts.go): two
	// DaemonSets named as operands of different parts, small enough to fit
	// everywhere, and the "operand" one and the bare pod in the last part.
	for name, memory := range map[string]string{"operand": "512Mi", operand.Lab.Driver().DaemonSet: "16Mi", operand.Lab.GPUFeatureDiscovery().DaemonSet: "16Mi"} {
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, testcluster.DaemonSet(env.Namespace, name, selector, memory), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bare := &corev1.Pod{
		// Not labelled app=operand: the DaemonSet controller would adopt it.
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Finalizers: []string{"example.com/hold"}},
		Spec: corev1.PodSpec{
			NodeName:   env.NodeName("a"),
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/fake:1"}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
		_, _ = env.Client.CoreV1().Pods(env.Namespace).Patch(context.Background(), "bare", "application/merge-patch+json", patch, metav1.PatchOptions{})
	})
	if err := env.Client.CoreV1().Pods(env.Namespace).Delete(ctx, "bare", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Settled: a Running "operand" pod on each of the six plain nodes, none
	// on the tainted one, one Pending for lack of memory, the bare pod held
	// in deletion; and a Running pod of each small DaemonSet on those seven.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running, pending, deleting := 0, 0, 0
		for _, p := range pods {
			switch {
			case p.DeletionTimestamp != nil:
				deleting++
			case p.Status.Phase == corev1.PodRunning:
				running++
			case p.Status.Phase == corev1.PodPending && snapshot.PodFrom(&p).Reason != "":
				pending++
			}
		}
		return running == 20 && pending == 1 && deleting == 1 && len(pods) == 22
	})
	for _, name := range []string{"operand", operand.Lab.Driver().DaemonSet, operand.Lab.GPUFeatureDiscovery().DaemonSet} {
		env.WaitForDaemonSet(t, env.Namespace, name, func(d *appsv1.DaemonSet) bool {
			return d.Status.ObservedGeneration == d.Generation && d.Status.DesiredNumberScheduled == 7
		})
	}

	opts := read.Options{NodeSelector: testcluster.LabelTestID + "=" + env.ID, DaemonSets: true}
	jsonClient := jsonClient(env)
	want := plainRead(t, jsonClient, env.Namespace, opts)
	if len(want.Nodes) != 11 || len(want.Pods) != 22 || len(want.DaemonSets) != 3 {
		t.Fatalf("reference read: %d nodes, %d pods, %d DaemonSets; want 11, 22, 3", len(want.Nodes), len(want.Pods), len(want.DaemonSets))
	}
	gpus := want.Nodes[slices.IndexFunc(want.Nodes, func(n snapshot.Node) bool { return n.Name == env.NodeName("gpus") })]
	if d := gpus.Devices; !reflect.DeepEqual(d, map[string]snapshot.DeviceCount{"nvidia.com/gpu": {Capacity: 8, Allocatable: 7}, "nvidia.com/mig-1g.10gb": {Capacity: 7, Allocatable: 7}}) {
		t.Errorf("devices of the GPU node: %v", d)
	}

	cf := kube.NewFlags()
	cf.KubeConfig = &env.Kubeconfig
	clients, err := kube.Connect(cf)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		client   kubernetes.Interface
		pageSize int64
	}{
		{"protobuf streamed", clients.Kube, 0},
		{"protobuf in pages of 3", clients.Kube, 3},
		{"JSON in pages of 3", jsonClient, 3},
	} {
		o := opts
		o.PageSize = tc.pageSize
		got, err := read.Snapshot(ctx, tc.client, env.Namespace, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read differs from the plain list\n got: %+v\nwant: %+v", tc.name, got, want)
		}
	}

	// Whole nodes with only the labels the DaemonSets select on, the
	// filter made of the DaemonSets read before them.
	selected := func(dss []snapshot.DaemonSet) func(string) bool {
		keys := map[string]bool{}
		for _, d := range dss {
			for _, k := range d.SelectorLabels() {
				keys[k] = true
			}
		}
		return func(k string) bool { return keys[k] }
	}
	narrow := *want
	narrow.Nodes = nil
	for _, n := range want.Nodes {
		n.Labels = maps.Clone(n.Labels)
		if maps.DeleteFunc(n.Labels, func(k, _ string) bool { return k != "example.com/deploy" }); len(n.Labels) == 0 {
			n.Labels = nil
		}
		narrow.Nodes = append(narrow.Nodes, n)
	}
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
	}{{"protobuf, labels the DaemonSets select on", clients.Kube}, {"JSON, labels the DaemonSets select on", jsonClient}} {
		o := opts
		o.NodeLabels = selected
		got, err := read.Snapshot(ctx, tc.client, env.Namespace, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, &narrow) {
			t.Errorf("%s: read differs from the plain list's selected labels\n got: %+v\nwant: %+v", tc.name, got, &narrow)
		}
	}
}

func TestReadFailsOnOneLine(t *testing.T) {
	c := kubernetes.NewForConfigOrDie(&rest.Config{Host: "https://127.0.0.1:1"})
	_, err := read.Snapshot(context.Background(), c, "gpu-operator", read.Options{})
	if err == nil || !strings.Contains(err.Error(), "list ") {
		t.Fatalf("Read against no server: err = %v, want a wrapped list error", err)
	}
}

// TestNarrowReadsJudgeAlike proves, on nodes in every state the order check
// and the audit tell apart, that the narrow reads give the verdicts of the
// whole read: one node and its pods (Options.Node) the order check's, the
// nodes' names and deploy labels alone (Options.DeployLabelsOnly) the audit's, stuck pauses
// included, and the matrix's.
func TestNarrowReadsJudgeAlike(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()
	for _, o := range operand.Lab {
		memory := "64Mi"
		if o.Name == operand.Driver {
			memory = "512Mi"
		}
		ds := testcluster.DaemonSet(env.Namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true", testcluster.LabelTestID: env.ID}, memory)
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labels := func(set ...string) map[string]string {
		l := map[string]string{operand.GPUProductLabel: "NVIDIA-H100-80GB-HBM3"} // GFD's, not a deploy label
		for _, o := range operand.Lab {
			l[o.LabelKey()] = "true"
		}
		for i := 0; i < len(set); i += 2 {
			l[operand.LabelPrefix+set[i]] = set[i+1]
		}
		return l
	}
	env.AddNode(t, env.NodeName("full"), labels())
	env.AddNode(t, env.NodeName("nokit"), labels(operand.ContainerToolkit, "false"))            // device plugin without toolkit
	env.AddNode(t, env.NodeName("hostdriver"), labels(operand.Driver, "false"))                 // the host's driver: excused
	env.AddNode(t, env.NodeName("small"), labels(), testcluster.WithMemory("256Mi"))            // driver Pending: toolkit without driver
	env.AddNode(t, env.NodeName("paused"), labels(operand.Driver, "paused-for-driver-upgrade")) // a helper's pause
	env.AddNode(t, env.NodeName("tainted"), labels(), testcluster.WithTaints(corev1.Taint{Key: "example.com/broken", Value: "yes", Effect: corev1.TaintEffectNoSchedule}))
	env.AddNode(t, env.NodeName("cordoned"), labels(), testcluster.Unschedulable())
	env.AddNode(t, env.NodeName("down"), labels(), testcluster.NotReady())
	// Running: full 5, nokit 4, hostdriver 4, small 4, paused 4, cordoned 5;
	// and small's driver pod unscheduled.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running, starved := 0, false
		for _, p := range pods {
			pod := snapshot.PodFrom(&p)
			running += btoi(pod.Present())
			starved = starved || (pod.Target == env.NodeName("small") && pod.Node == "" && pod.Reason != "")
		}
		return running == 26 && starved
	})

	cf := kube.NewFlags()
	cf.KubeConfig = &env.Kubeconfig
	clients, err := kube.Connect(cf)
	if err != nil {
		t.Fatal(err)
	}
	take := func(opts read.Options) *snapshot.Snapshot {
		t.Helper()
		opts.DaemonSets, opts.Trace = true, operand.Paused
		s, err := read.Snapshot(ctx, clients.Kube, env.Namespace, opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole := take(read.Options{NodeSelector: testcluster.LabelTestID + "=" + env.ID})
	if len(whole.Nodes) != 8 {
		t.Fatalf("whole read: %d nodes, want 8", len(whole.Nodes))
	}
	if _, ok := whole.Nodes[0].Labels[testcluster.LabelTestID]; !ok {
		t.Fatalf("whole read: node %s lacks its %s label, which the narrow reads must drop", whole.Nodes[0].Name, testcluster.LabelTestID)
	}
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	findings := 0
	for _, node := range append(judge.SortedNodes(whole), snapshot.Node{Name: env.NodeName("absent")}) {
		want, wantErr := judge.Order(whole, node.Name, operand.Lab, rules)
		one := take(read.Options{Node: node.Name, DeployLabelsOnly: true}) // as order-check reads
		got, err := judge.Order(one, node.Name, operand.Lab, rules)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(err, wantErr) {
			t.Errorf("order-check %s: one-node read %v, %v; whole read %v, %v", node.Name, got, err, want, wantErr)
		}
		findings += len(want.Findings)
		// The one-node read holds that node and the pods bound to it, as the whole read has them.
		var pods []snapshot.Pod
		for _, p := range whole.Pods {
			if p.Node == node.Name {
				pods = append(pods, p)
			}
		}
		if wantErr == nil && (len(one.Nodes) != 1 || !reflect.DeepEqual(one.Nodes[0], metadataOf(node)) || !reflect.DeepEqual(one.Pods, pods)) {
			t.Errorf("one-node read of %s:\n got %+v %+v\nwant %+v %+v", node.Name, one.Nodes, one.Pods, metadataOf(node), pods)
		}
	}
	if findings < 2 {
		t.Errorf("the whole read found %d broken rules, want those of nokit and small at least", findings)
	}

	meta := take(read.Options{NodeSelector: testcluster.LabelTestID + "=" + env.ID, DeployLabelsOnly: true})
	audit := func(s *snapshot.Snapshot) []judge.NodeAudit {
		a := judge.Audit(s, operand.Lab)
		judge.Stuck(a, s, operand.Lab, time.Now().Add(time.Hour), time.Minute)
		return a
	}
	want := audit(whole)
	if got := audit(meta); !reflect.DeepEqual(got, want) {
		t.Errorf("audit of the metadata read:\n got %+v\nwant %+v", got, want)
	}
	if !slices.ContainsFunc(want, func(a judge.NodeAudit) bool { return len(a.Stuck) > 0 }) {
		t.Errorf("no stuck pause in %+v: the paused node's label change was not traced", want)
	}
	if got, want := judge.NewIndex(meta).Matrix(operand.Lab), judge.NewIndex(whole).Matrix(operand.Lab); !reflect.DeepEqual(got, want) {
		t.Errorf("matrix of the metadata read:\n got %+v\nwant %+v", got, want)
	}
	for i, n := range whole.Nodes {
		if !reflect.DeepEqual(meta.Nodes[i], metadataOf(n)) {
			t.Errorf("metadata read of %s: %+v, want %+v", n.Name, meta.Nodes[i], metadataOf(n))
		}
	}
}

// metadataOf is what a read of the node's name and deploy labels alone gives:
// nothing of its spec, so nor who cordoned or tainted it.
func metadataOf(n snapshot.Node) snapshot.Node {
	n.Taints, n.Unschedulable, n.Ready = nil, false, false
	n.Cordon, n.Tainter = nil, nil
	kept := map[string]string{}
	for k, v := range n.Labels {
		if strings.HasPrefix(k, operand.LabelPrefix) {
			kept[k] = v
		}
	}
	n.Labels = kept
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
