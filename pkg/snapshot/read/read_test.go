package read_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

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
		s.Nodes = append(s.Nodes, snapshot.NodeFrom(&nodes.Items[i]))
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

	selector := map[string]string{"example.com/deploy": env.ID}
	if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, testcluster.DaemonSet(env.Namespace, "operand", selector, "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
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
	// Settled: a Running operand pod on each of the six plain nodes, none on
	// the tainted one, one Pending for lack of memory, the bare pod held in
	// deletion.
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
		return running == 6 && pending == 1 && deleting == 1 && len(pods) == 8
	})
	env.WaitForDaemonSet(t, env.Namespace, "operand", func(d *appsv1.DaemonSet) bool {
		return d.Status.ObservedGeneration == d.Generation && d.Status.DesiredNumberScheduled == 7
	})

	opts := read.Options{NodeSelector: testcluster.LabelTestID + "=" + env.ID, DaemonSets: true}
	jsonCfg := rest.CopyConfig(env.RESTConfig)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	jsonClient := kubernetes.NewForConfigOrDie(jsonCfg)
	want := plainRead(t, jsonClient, env.Namespace, opts)
	if len(want.Nodes) != 10 || len(want.Pods) != 8 || len(want.DaemonSets) != 1 {
		t.Fatalf("reference read: %d nodes, %d pods, %d DaemonSets; want 10, 8, 1", len(want.Nodes), len(want.Pods), len(want.DaemonSets))
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
}

func TestReadFailsOnOneLine(t *testing.T) {
	c := kubernetes.NewForConfigOrDie(&rest.Config{Host: "https://127.0.0.1:1"})
	_, err := read.Snapshot(context.Background(), c, "gpu-operator", read.Options{})
	if err == nil || !strings.Contains(err.Error(), "list ") {
		t.Fatalf("Read against no server: err = %v, want a wrapped list error", err)
	}
}
