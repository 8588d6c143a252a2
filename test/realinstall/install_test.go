package realinstall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/settle"
)

var (
	crdGVR           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	clusterPolicyGVR = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}
	nvidiaDriverGVR  = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "nvidiadrivers"}
)

// install is the fixture loaded into one test's namespace.
type install struct {
	env    *testcluster.Env
	dyn    dynamic.Interface
	policy *unstructured.Unstructured // the ClusterPolicy, as last written
	nodes  map[string]string          // short name in nodes.yaml -> node name
}

// docs reads a multi-document YAML file of testdata.
func docs(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("testdata/%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, &u)
		}
	}
	return out
}

// newInstall creates the CRDs (once per cluster), the ClusterPolicy (its
// status naming the test's namespace), the operator's objects and DaemonSets
// as controlled by it, and the nodes of nodes.yaml.
func newInstall(t *testing.T) *install {
	t.Helper()
	in := withCRDs(t)
	for _, u := range docs(t, "operator.yaml") {
		in.create(t, u)
	}
	in.addNodes(t)
	in.settle(t)
	return in
}

// withCRDs is an install of nothing yet in a namespace of its own, on a
// cluster that serves the operator's CRDs.
func withCRDs(t *testing.T) *install {
	t.Helper()
	env := testcluster.New(t)
	env.Timeout = 3 * time.Minute
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	in := &install{env: env, dyn: dyn, nodes: map[string]string{}}
	ctx := context.Background()
	for _, crd := range docs(t, "crds.yaml") {
		_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
		in.waitEstablished(t, crd.GetName())
	}
	return in
}

// waitEstablished watches the CRD until it is established.
func (in *install) waitEstablished(t *testing.T, name string) {
	t.Helper()
	established := func(u *unstructured.Unstructured) bool {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		return slices.ContainsFunc(conds, func(c any) bool {
			m, ok := c.(map[string]any)
			return ok && m["type"] == "Established" && m["status"] == "True"
		})
	}
	in.waitFor(t, time.Minute, "CRD "+name+" to be established", byName(in.dyn.Resource(crdGVR), name), &unstructured.Unstructured{},
		func(s cache.Store) bool {
			return slices.ContainsFunc(s.List(), func(o any) bool { return established(o.(*unstructured.Unstructured)) })
		})
}

// waitFor lists and watches with lw until done, given the current objects,
// returns true; it fails the test after timeout, saying what it waited for.
func (in *install) waitFor(t *testing.T, timeout time.Duration, what string, lw cache.ListerWatcher, obj runtime.Object, done func(cache.Store) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var store cache.Store
	_, err := watchtools.UntilWithSync(ctx, lw, obj,
		func(s cache.Store) (bool, error) { store = s; return done(s), nil },
		func(watch.Event) (bool, error) { return done(store), nil })
	if err != nil {
		t.Fatalf("waiting %v for %s: %v", timeout, what, err)
	}
}

// byName lists and watches the one object of r named name. The dynamic
// client has no REST client of its own to build one from.
func byName(r dynamic.ResourceInterface, name string) cache.ListerWatcher {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return r.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return r.Watch(ctx, o)
		},
	}
}

// create creates one fixture object: namespaced ones (the operator's
// Deployment among them) in the test's namespace, DaemonSets controlled by the ClusterPolicy (as the operator
// sets them), cluster-scoped ones deleted when the test ends.
func (in *install) create(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	c := in.env.Client
	var err error
	switch u.GetKind() {
	case "ClusterPolicy":
		var created *unstructured.Unstructured
		created, err = in.dyn.Resource(clusterPolicyGVR).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			break
		}
		in.cleanup(t, clusterPolicyGVR, created.GetName())
		_ = unstructured.SetNestedField(created.Object, map[string]any{"state": "ready", "namespace": in.env.Namespace}, "status")
		in.policy, err = in.dyn.Resource(clusterPolicyGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	case "NVIDIADriver":
		_, err = in.dyn.Resource(nvidiaDriverGVR).Create(ctx, u, metav1.CreateOptions{})
		in.cleanup(t, nvidiaDriverGVR, u.GetName())
	case "RuntimeClass":
		var rc nodev1.RuntimeClass
		convert(t, u, &rc)
		_, err = c.NodeV1().RuntimeClasses().Create(ctx, &rc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case "ServiceAccount":
		var sa corev1.ServiceAccount
		convert(t, u, &sa)
		_, err = c.CoreV1().ServiceAccounts(in.env.Namespace).Create(ctx, &sa, metav1.CreateOptions{})
	case "DaemonSet":
		var ds appsv1.DaemonSet
		convert(t, u, &ds)
		if in.policy != nil && !strings.HasPrefix(ds.Name, "nvidia-gpu-driver-") {
			ds.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(in.policy, in.policy.GroupVersionKind())}
		}
		_, err = c.AppsV1().DaemonSets(in.env.Namespace).Create(ctx, &ds, metav1.CreateOptions{})
	case "Deployment":
		var d appsv1.Deployment
		convert(t, u, &d)
		_, err = c.AppsV1().Deployments(in.env.Namespace).Create(ctx, &d, metav1.CreateOptions{})
	default:
		t.Fatalf("fixture: unexpected kind %s", u.GetKind())
	}
	if err != nil {
		t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func (in *install) cleanup(t *testing.T, gvr schema.GroupVersionResource, name string) {
	t.Cleanup(func() {
		err := in.dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s %s: %v", gvr.Resource, name, err)
		}
	})
}

func convert(t *testing.T, u *unstructured.Unstructured, into runtime.Object) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("fixture %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// nodesFile is testdata/nodes.yaml.
type nodesFile struct {
	Writes map[string]map[string]string `json:"writes"` // label sets the nodes share, through YAML anchors
	Nodes  []struct {
		Name     string `json:"name"`
		Cordoned bool   `json:"cordoned"`
		Writes   []struct {
			Manager string            `json:"manager"`
			Ago     string            `json:"ago"`
			Labels  map[string]string `json:"labels"`
		} `json:"writes"`
	} `json:"nodes"`
}

// addNodes creates the KWOK nodes of nodes.yaml and labels each as its
// writers do: one label patch per write, sent with the writer's name as user
// agent, so that managedFields records it as the field manager.
func (in *install) addNodes(t *testing.T) {
	t.Helper()
	var f nodesFile
	readYAML(t, "nodes.yaml", &f)
	for _, n := range f.Nodes {
		name := in.env.NodeName(n.Name)
		in.nodes[n.Name] = name
		var opts []testcluster.NodeOption
		if n.Cordoned {
			opts = append(opts, testcluster.Unschedulable())
		}
		in.env.AddNode(t, name, nil, opts...)
		for _, w := range n.Writes {
			in.label(t, name, w.Manager, w.Labels)
			if w.Ago != "" {
				ago, err := time.ParseDuration(w.Ago)
				if err != nil {
					t.Fatal(err)
				}
				in.backdate(t, name, w.Manager, ago)
			}
		}
	}
}

// label patches a node's labels as field manager manager.
func (in *install) label(t *testing.T, node, manager string, labels map[string]string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.as(t, manager).CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("label node %s as %s: %v", node, manager, err)
	}
}

// as is a client whose writes managedFields records as manager's: the API
// server names the manager of a write without one after its user agent.
func (in *install) as(t *testing.T, manager string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(in.env.RESTConfig)
	cfg.UserAgent = manager + "/v0.0.0"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// backdate moves the time of manager's managedFields entries on the node
// ago into the past, as if its last write were that old. The API server
// keeps managedFields a client sends, as long as they are valid, but reverts
// a write that changes nothing but their times (it would only bump the
// resourceVersion): so the patch also notes the backdating in an annotation.
// The patch carries the resourceVersion it was computed from: a write in
// between (KWOK's heartbeats, the node lifecycle controller) makes it
// conflict, and it is computed again, rather than sending that write's
// managedFields back stale. No later write can undo it: the controllers
// patch the node without managedFields, or update it from the copy they
// read, which conflicts if stale.
func (in *install) backdate(t *testing.T, node, manager string, ago time.Duration) {
	t.Helper()
	ctx := context.Background()
	nodes := in.env.Client.CoreV1().Nodes()
	then := metav1.NewTime(time.Now().Add(-ago).Truncate(time.Second))
	var n *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var err error
		if n, err = nodes.Get(ctx, node, metav1.GetOptions{}); err != nil {
			return err
		}
		for i := range n.ManagedFields {
			if n.ManagedFields[i].Manager == manager {
				n.ManagedFields[i].Time = &then
			}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": n.ResourceVersion,
			"managedFields":   n.ManagedFields,
			"annotations":     map[string]string{"gpuops.test/backdated": manager + " " + then.UTC().Format(time.RFC3339)},
		}})
		if err != nil {
			return err
		}
		n, err = nodes.Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("backdate %s on node %s: %v", manager, node, err)
	}
	i := slices.IndexFunc(n.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
	if i < 0 || n.ManagedFields[i].Time == nil || !n.ManagedFields[i].Time.Equal(&then) {
		t.Fatalf("node %s: the API server did not keep the backdated entry of %s: %+v", node, manager, n.ManagedFields)
	}
}

// settle waits until every DaemonSet of the namespace has settled.
func (in *install) settle(t *testing.T) {
	t.Helper()
	dss, err := in.env.Client.AppsV1().DaemonSets(in.env.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dss.Items {
		names = append(names, d.Name)
	}
	if _, err := settle.Wait(context.Background(), in.env.Client, in.env.Namespace, names, settle.Options{Timeout: in.env.Timeout}); err != nil {
		t.Fatalf("settle: %v", err)
	}
}

// ensure makes a fixture object exist or not. An object that goes is deleted
// in the foreground, and ensure waits until it is gone: the pods of a
// DaemonSet the operator no longer renders must not count.
func (in *install) ensure(t *testing.T, u *unstructured.Unstructured, present bool) {
	t.Helper()
	ctx := context.Background()
	var get func() error
	var del func(metav1.DeleteOptions) error
	var lw cache.ListerWatcher // the object alone, to watch it go
	var obj runtime.Object
	name := fields.OneTermEqualSelector("metadata.name", u.GetName())
	switch u.GetKind() {
	case "DaemonSet":
		dss := in.env.Client.AppsV1().DaemonSets(in.env.Namespace)
		get = func() error { _, err := dss.Get(ctx, u.GetName(), metav1.GetOptions{}); return err }
		del = func(o metav1.DeleteOptions) error { return dss.Delete(ctx, u.GetName(), o) }
		lw = cache.NewListWatchFromClient(in.env.Client.AppsV1().RESTClient(), "daemonsets", in.env.Namespace, name)
		obj = &appsv1.DaemonSet{}
	case "ServiceAccount":
		sas := in.env.Client.CoreV1().ServiceAccounts(in.env.Namespace)
		get = func() error { _, err := sas.Get(ctx, u.GetName(), metav1.GetOptions{}); return err }
		del = func(o metav1.DeleteOptions) error { return sas.Delete(ctx, u.GetName(), o) }
		lw = cache.NewListWatchFromClient(in.env.Client.CoreV1().RESTClient(), "serviceaccounts", in.env.Namespace, name)
		obj = &corev1.ServiceAccount{}
	case "NVIDIADriver":
		nvds := in.dyn.Resource(nvidiaDriverGVR)
		get = func() error { _, err := nvds.Get(ctx, u.GetName(), metav1.GetOptions{}); return err }
		del = func(o metav1.DeleteOptions) error { return nvds.Delete(ctx, u.GetName(), o) }
		lw, obj = byName(nvds, u.GetName()), &unstructured.Unstructured{}
	default:
		t.Fatalf("ensure: unexpected kind %s", u.GetKind())
	}
	err := get()
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		t.Fatal(err)
	case present && err != nil:
		in.create(t, u)
	case !present && err == nil:
		foreground := metav1.DeletePropagationForeground
		if err := del(metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
			t.Fatal(err)
		}
		in.waitFor(t, in.env.Timeout, u.GetKind()+" "+u.GetName()+" to go", lw, obj,
			func(s cache.Store) bool { return len(s.ListKeys()) == 0 })
	}
}

// readYAML reads a YAML file of testdata into v.
func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
