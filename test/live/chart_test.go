package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/render"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
)

var update = flag.Bool("update", false, "copy the rule file and the dashboard into the chart")

const chart = "../../charts/gpuops"

// The chart's copies of files whose source is a kustomize base: Helm reads
// nothing outside the chart's folder.
var chartCopies = map[string]string{
	chart + "/files/gpuops.rules.yml": "../../kustomize/deploy/alerts/gpuops.rules.yml",
	chart + "/files/gpuops.json":      "../../kustomize/deploy/grafana/gpuops.json",
}

// helm runs helm (hack/build-tools.sh builds it from pinned source into
// .lab/bin) with folders of the test's own for its settings and caches,
// and no kubeconfig but the test cluster's, passed as --kubeconfig.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("helm")
	if err != nil {
		t.Fatalf("helm is not on PATH: build it with hack/build-tools.sh and put .lab/bin on PATH (%v)", err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data",
		"KUBECONFIG="+home+"/none")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func mustHelm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := helm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// valuesFile writes values as a values file of the test and returns its path.
func valuesFile(t *testing.T, values map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// allOn is every switch of the chart on.
var allOn = map[string]any{"quarantine": "on", "reports": true, "events": true, "workloads": true, "grafanaDashboard": map[string]any{"enabled": true}}

func TestChartLint(t *testing.T) {
	mustHelm(t, "lint", "--strict", chart)
	mustHelm(t, "lint", "--strict", chart, "-f", valuesFile(t, allOn))
}

// TestChartCopies: the chart's copies of the rule file and the dashboard
// are those files (go test ./test/live -run TestChartCopies -update writes
// them).
func TestChartCopies(t *testing.T) {
	for copied, source := range chartCopies {
		want, err := os.ReadFile(source)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(copied, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(copied); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not %s (%v): run go test ./test/live -run TestChartCopies -update", copied, source, err)
		}
	}
}

// TestChartIsKustomize: for the same settings, helm template renders the
// objects the kustomize bases render, object by object (kind, namespace,
// name, and every field). The kustomizations are the ones a user applies
// (or a kustomization of their own naming them, for the components);
// kubectl apply -n puts an object that names no namespace into the
// namespace, as Helm does, so the comparison does too.
func TestChartIsKustomize(t *testing.T) {
	const (
		ns        = kube.DefaultNamespace
		operator  = "--api-versions=monitoring.coreos.com/v1" // the Prometheus Operator's CRDs served
		base      = "resources:\n- ../../kustomize/deploy/base\n"
		namespace = "namespace: " + ns + "\n"
	)
	for _, tc := range []struct {
		name          string
		values        map[string]any
		flags         []string
		kustomization string
	}{
		{"defaults", nil, nil, base},
		{"Prometheus Operator", nil, []string{operator}, "resources:\n- ../../kustomize/deploy/prometheus-operator\n"},
		{"events", map[string]any{"events": true}, nil, "resources:\n- ../../kustomize/deploy/events\n"},
		{"reports", map[string]any{"reports": true}, nil, namespace + base + "components:\n- ../../kustomize/deploy/reports\n"},
		{"quarantine on", map[string]any{"quarantine": "on"}, nil, namespace + base + "components:\n- ../../kustomize/deploy/quarantine\n"},
		{"workloads", map[string]any{"workloads": true}, nil, namespace + base + "components:\n- ../../kustomize/deploy/workloads\n"},
		{"dashboard", map[string]any{"grafanaDashboard": map[string]any{"enabled": true}}, nil, base + "- ../../kustomize/deploy/grafana\n"},
		{"all on", allOn, []string{operator}, "resources:\n- ../../kustomize/deploy/events\n- ../../kustomize/deploy/grafana\n" +
			"components:\n- ../../kustomize/deploy/servicemonitor\n- ../../kustomize/deploy/prometheusrule\n" +
			"- ../../kustomize/deploy/reports\n- ../../kustomize/deploy/quarantine\n- ../../kustomize/deploy/workloads\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "gpuops", chart, "-n", ns, "-f", valuesFile(t, tc.values)}, tc.flags...)
			got := objects(t, mustHelm(t, args...), ns)
			res, err := render.Overlay(gpuops.Kustomize, "chart", tc.kustomization)
			if err != nil {
				t.Fatal(err)
			}
			y, err := res.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			want := objects(t, string(y), ns)
			if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
				t.Fatalf("helm template renders\n%s\nkustomize\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			for id, w := range want {
				if !reflect.DeepEqual(got[id], w) {
					gy, _ := yaml.Marshal(got[id])
					wy, _ := yaml.Marshal(w)
					t.Errorf("%s: helm template renders\n%s\nkustomize\n%s", id, gy, wy)
				}
			}
		})
	}
}

// clusterScoped are the kinds of the chart that live in no namespace.
var clusterScoped = []string{"ClusterRole", "ClusterRoleBinding"}

// objects reads a multi-document YAML stream into its objects by
// "kind namespace/name", a namespaced object that names no namespace put
// into ns, and a RoleBinding's service account that names none into the
// binding's (as the RBAC authorizer reads it: kubernetes/kubernetes v1.37.2
// pkg/registry/rbac/validation/rule.go, appliesToUser).
func objects(t *testing.T, stream, ns string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(stream, "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if o == nil {
			continue // only comments
		}
		meta, _ := o["metadata"].(map[string]any)
		if _, set := meta["namespace"]; !set && !slices.Contains(clusterScoped, o["kind"].(string)) {
			meta["namespace"] = ns
		}
		if o["kind"] == "RoleBinding" {
			subjects, _ := o["subjects"].([]any)
			for _, s := range subjects {
				if s := s.(map[string]any); s["kind"] == "ServiceAccount" && s["namespace"] == nil {
					s["namespace"] = meta["namespace"]
				}
			}
		}
		namespace, _ := meta["namespace"].(string) // none: cluster-scoped
		id := fmt.Sprintf("%s %s/%s", o["kind"], namespace, meta["name"])
		if _, dup := out[id]; dup {
			t.Fatalf("%s twice", id)
		}
		out[id] = o
	}
	return out
}

// TestChartValuesSchema: values.schema.json refuses a wrong value before
// anything is rendered.
func TestChartValuesSchema(t *testing.T) {
	for _, bad := range []map[string]any{
		{"quarantine": "yes"},
		{"quarantine": true},
		{"replicas": 0},
		{"replicas": "2"},
		{"image": map[string]any{"repository": ""}},
		{"image": map[string]any{"repository": "registry.example.com/gpuops", "tag": "v1 beta"}},
		{"image": map[string]any{"repository": "gpuops", "pullPolicy": "Sometimes"}},
		{"resources": map[string]any{"limits": map[string]any{"memory": "lots"}}},
		{"reports": "true"},
		{"serviceMonitor": map[string]any{"enable": true}},
		{"extraArgs": []any{"quarantine-max=3"}},
		{"groupBy": "node pool"},
		{"groupBy": ""},
		{"replica": 2},
	} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			out, err := helm(t, "template", "gpuops", chart, "-f", valuesFile(t, bad))
			if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
				t.Errorf("helm template with %v: %v, want the schema's refusal; rendered:\n%s", bad, err, out)
			}
		})
	}
}

// TestChartInstall installs the chart with helm on the real control plane,
// the Prometheus Operator's CRDs served: a wrong value is refused and
// nothing is installed; then the chart installs its objects, the
// ServiceMonitor and PrometheusRule among them, and gpuops serve, with a
// token of the chart's service account and the arguments of the chart's
// Deployment, answers /readyz and /metrics with the chart's rights and no
// more: no watch fails, and it may patch nodes only once the quarantine is
// switched on.
func TestChartInstall(t *testing.T) {
	f := newFleet(t)
	env := f.env
	ns := env.Namespace
	node := f.gpuNode(t, "a", testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: resource.MustParse("8")}))
	operatorCRDs(t, env)
	kubeconfig := "--kubeconfig=" + env.Kubeconfig
	// A release of the test's own: the cluster-scoped objects are named
	// after it.
	release := "gpuops-" + env.ID
	installed := func() string {
		t.Helper()
		return strings.TrimSpace(mustHelm(t, "list", kubeconfig, "-n", ns, "--deployed", "--failed", "--pending", "-q"))
	}

	if out, err := helm(t, "install", release, chart, kubeconfig, "-n", ns, "--set", "quarantine=yes"); err == nil ||
		!strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
		t.Fatalf("helm install with quarantine=yes: %v, want the schema's refusal; output:\n%s", err, out)
	}
	if r := installed(); r != "" {
		t.Fatalf("after a refused install, helm lists releases %q", r)
	}
	account := release + "-judge-serve"
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Get(context.Background(), account, metav1.GetOptions{}); err == nil {
		t.Fatalf("after a refused install, service account %s exists", account)
	}

	mustHelm(t, "install", release, chart, kubeconfig, "-n", ns)
	t.Cleanup(func() { _, _ = helm(t, "uninstall", release, kubeconfig, "-n", ns, "--wait") })
	if r := installed(); r != release {
		t.Fatalf("helm lists releases %q, want %s", r, release)
	}
	var manifest []string
	for id := range objects(t, mustHelm(t, "get", "manifest", release, kubeconfig, "-n", ns), ns) {
		manifest = append(manifest, id)
	}
	slices.Sort(manifest)
	want := []string{"ClusterRole /" + account, "ClusterRoleBinding /" + account,
		"Deployment " + ns + "/" + release, "PrometheusRule " + ns + "/" + release, "Role " + ns + "/" + account,
		"RoleBinding " + ns + "/" + account, "Service " + ns + "/" + release, "ServiceAccount " + ns + "/" + account,
		"ServiceMonitor " + ns + "/" + release}
	if !slices.Equal(manifest, want) {
		t.Errorf("the release holds\n%s\nwant\n%s", strings.Join(manifest, "\n"), strings.Join(want, "\n"))
	}

	// serve as the chart's Deployment runs it, with the account's rights.
	var deploy struct {
		Spec struct {
			Template struct {
				Spec struct{ Containers []struct{ Args []string } }
			}
		}
	}
	if err := json.Unmarshal([]byte(env.Kubectl(t, "get", "deployment", "-n", ns, release, "-o", "json")), &deploy); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", env.AccountKubeconfig(t, ns, account), "-n", ns, "-l", testcluster.LabelTestID + "=" + env.ID}
	for _, a := range deploy.Spec.Template.Spec.Containers[0].Args[1:] {
		if a != "--namespace=$(POD_NAMESPACE)" { // the pod's namespace: -n above
			args = append(args, a)
		}
	}
	srv := serve(t, args...)
	srv.WaitFor(t, "the node judged usable with the chart's rights, in its pool, the quarantine in dry-run", func(m gpuopstest.Scrape) bool {
		return m.IsOne("gpuops_node_usable", map[string]string{"node": node}) && m.IsOne("gpuops_quarantine_mode", map[string]string{"mode": "dry-run"}) &&
			m.IsOne("gpuops_node_pool", map[string]string{"node": node, "pool": summary.NoGroup})
	})
	if code, body := srv.Get(t, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// The quarantine's line comes as it starts, before or after the serving one.
	lines := srv.Stderr.All()
	acts := slices.IndexFunc(lines, regexp.MustCompile(`^quarantine: \S+ acts \(dry-run\)$`).MatchString)
	if acts < 0 {
		t.Errorf("serve's stderr %q, want a line that its quarantine acts in dry-run", lines)
	} else {
		expectServeRights(t, slices.Delete(lines, acts, acts+1))
	}

	can := func(verb, resource string) bool {
		t.Helper()
		r, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:" + ns + ":" + account,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: resource}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if !can("watch", "nodes") || can("patch", "nodes") || can("create", "events") || can("list", "secrets") {
		t.Errorf("the chart's account with the quarantine in dry-run: watch nodes %v, patch nodes %v, create events %v, list secrets %v; want only the first",
			can("watch", "nodes"), can("patch", "nodes"), can("create", "events"), can("list", "secrets"))
	}
	mustHelm(t, "upgrade", release, chart, kubeconfig, "-n", ns, "--reuse-values", "--set", "quarantine=on")
	if !can("patch", "nodes") || can("list", "secrets") {
		t.Errorf("the chart's account with the quarantine on: patch nodes %v, list secrets %v; want only the first", can("patch", "nodes"), can("list", "secrets"))
	}
}
