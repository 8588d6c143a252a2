package bundle_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/kube"
)

const nodesYAML = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: b, labels: {pool: p1}}
- apiVersion: v1
  kind: Node
  metadata: {name: a, labels: {pool: p2}}
- apiVersion: v1
  kind: Secret
  metadata: {name: s, namespace: n}
`

const podsJSON = `{"apiVersion":"v1","kind":"PodList","items":[
{"metadata":{"name":"p1","namespace":"gpu-operator"},"spec":{"nodeName":"a"},"status":{"phase":"Running"}},
{"metadata":{"name":"p2","namespace":"team"},"spec":{"nodeName":"b"},"status":{"phase":"Failed"}}]}
{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","namespace":"gpu-operator"}}`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	z.Write([]byte(s))
	z.Close()
	return b.Bytes()
}

// A folder of kubectl outputs, a List and a stream of a typed list and an
// object, gzipped or not, is served as the API server serves them: by
// namespace, field and label selectors, in the server's order, in pages;
// what it does not hold is NotHeld, named once.
func TestServeKubectlOutput(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "nodes.yaml", nodesYAML)
	if err := os.WriteFile(filepath.Join(dir, "pods.json.gz"), gz(t, podsJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "gpu_nodes.descr", "Name: a\nnot: [yaml")
	// must-gather holds the operator's pod twice: alone, and among the
	// namespace's; served once
	write(t, dir, "gpu_operator_pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: gpu-operator}\nspec: {nodeName: a}\nstatus: {phase: Running}\n")
	b, err := bundle.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !b.WithoutManagedFields() {
		t.Errorf("kubectl's nodes without their managedFields not said so")
	}
	if b.Skipped["v1/Secret"] != 1 {
		t.Errorf("skipped %v, want the Secret", b.Skipped)
	}
	s := bundle.NewServer(b)
	c, err := kube.InProcess(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "pool=p2"})
	if err != nil || len(nodes.Items) != 1 || nodes.Items[0].Name != "a" {
		t.Fatalf("nodes by label: %v %+v", err, nodes)
	}
	all, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(all.Items) != 1 || all.Items[0].Name != "a" || all.Continue == "" {
		t.Fatalf("first page: %v %+v", err, all)
	}
	rest, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1, Continue: all.Continue})
	if err != nil || len(rest.Items) != 1 || rest.Items[0].Name != "b" || rest.Continue != "" {
		t.Fatalf("second page: %v %+v", err, rest)
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Failed,spec.nodeName=a"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != "p1" {
		t.Fatalf("pods by field: %v %+v", err, pods)
	}
	if pods, err := c.CoreV1().Pods("team").List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of a namespace: %v %+v", err, pods)
	}
	// a dump of some namespaces' pods says nothing of another's
	if _, err := c.CoreV1().Pods("other").List(ctx, metav1.ListOptions{}); !bundle.IsNotHeld(err) {
		t.Fatalf("pods of a namespace the input holds none of: %v, want NotHeld", err)
	}
	for range 2 {
		_, err = c.AppsV1().ControllerRevisions("gpu-operator").List(ctx, metav1.ListOptions{})
		if !bundle.IsNotHeld(err) {
			t.Fatalf("controllerrevisions: %v, want NotHeld", err)
		}
	}
	// a kind gpuops does not read is not held either, not "not served": the
	// cluster may serve it
	if _, err := c.CoreV1().Secrets("gpu-operator").Get(ctx, "s", metav1.GetOptions{}); !bundle.IsNotHeld(err) {
		t.Fatalf("a secret: %v, want NotHeld", err)
	}
	if got, want := s.Missing(), []string{"pods in namespace other", "controllerrevisions.apps in namespace gpu-operator", "secrets s in namespace gpu-operator"}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
}

// A bundle's header decides what is held: a read made, even of nothing,
// is an empty list; one refused is refused as it was; one not made is
// NotHeld.
func TestServeHeader(t *testing.T) {
	h := &bundle.Header{APIVersion: bundle.HeaderAPIVersion, Kind: bundle.HeaderKind, Time: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), Namespace: "ops",
		Read:    []bundle.Read{{Resource: "nodes"}, {Resource: "pods", Namespace: "ops"}},
		NotRead: []bundle.NotRead{{Resource: "clusterpolicies.nvidia.com", Reason: "NotFound"}, {Resource: "daemonsets.apps", Namespace: "ops", Reason: "Forbidden", Message: "no"}}}
	var out bytes.Buffer
	if err := bundle.Write(&out, true, h, []bundle.Object{{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n"}}}); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load("-", &out)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Header.Time.Equal(h.Time) || b.Header.Namespace != "ops" || len(b.Objects) != 1 {
		t.Fatalf("read back %+v %v", b.Header, b.Objects)
	}
	c, _ := kube.InProcess(bundle.NewServer(b))
	ctx := context.Background()
	if pods, err := c.CoreV1().Pods("ops").List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods read, none: %v %+v", err, pods)
	}
	if _, err := c.AppsV1().DaemonSets("ops").List(ctx, metav1.ListOptions{}); err == nil || bundle.IsNotHeld(err) || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("daemonsets refused: %v", err)
	}
	if _, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !bundle.IsNotHeld(err) {
		t.Errorf("pods of every namespace not read: %v", err)
	}
}

// Bad inputs are one error each, naming the input.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	trunc := gz(t, nodesYAML)
	if err := os.WriteFile(filepath.Join(dir, "cut.yaml.gz"), trunc[:len(trunc)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	write(t, empty, "gpu_nodes.status", "NAME STATUS")
	for _, c := range []struct{ path, want string }{
		{write(t, dir, "text.yaml", "NAME STATUS\nnode-a Ready\n"), "text.yaml: not YAML or JSON"},
		{write(t, dir, "unknown.yaml", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n"), "holds no object gpuops reads (only v1/Secret)"},
		{filepath.Join(dir, "cut.yaml.gz"), "cut.yaml.gz: gzip: unexpected EOF"},
		{empty, "empty: no .yaml, .yml or .json file"},
		{write(t, dir, "blank.yaml", "\n---\n"), "blank.yaml: holds no object"},
	} {
		_, err := bundle.Load(c.path, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.path, err, c.want)
		}
	}
}

// Redacting names every node, pod and namespace by one hash throughout.
func TestRedact(t *testing.T) {
	h := &bundle.Header{Namespace: "ops"}
	items := []bundle.Object{
		{"kind": "Node", "metadata": map[string]any{"name": "node-a1", "labels": map[string]any{"kubernetes.io/hostname": "node-a1", "app": "ops"}}, "spec": map[string]any{"providerID": "kwok://node-a1"}},
		{"kind": "Pod", "metadata": map[string]any{"name": "web-1", "namespace": "ops"}, "spec": map[string]any{"nodeName": "node-a1"}},
		{"kind": "Event", "metadata": map[string]any{"name": "web-1.abc", "namespace": "ops"}, "involvedObject": map[string]any{"name": "web-1", "namespace": "ops"}, "message": "pod ops/web-1 on node-a1"},
	}
	bundle.Redact(h, items, []byte("salt"))
	var out bytes.Buffer
	bundle.Write(&out, false, h, items)
	text := out.String()
	for _, name := range []string{"node-a1", "web-1", `"namespace":"ops"`, "ops/"} {
		if strings.Contains(text, name) {
			t.Errorf("%q left in %s", name, text)
		}
	}
	node := items[0]["metadata"].(map[string]any)["name"].(string)
	if items[1]["spec"].(map[string]any)["nodeName"] != node || !strings.Contains(text, `"app":"ops"`) {
		t.Errorf("not one hash per name, or a label value redacted as a namespace: %s", text)
	}
}
