package live_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
)

// prometheusOperator is the Prometheus Operator release whose CRDs
// (ServiceMonitor, PrometheusRule) the manifests are checked against, read
// from its source module.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// moduleDir downloads a module (from the Go module proxy, like every other
// pinned source here) and returns its folder.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s", module, err, out)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %v %s", module, err, out)
	}
	return m.Dir
}

// TestDeployManifests checks kustomize/deploy as a user applies it, in the
// namespace it names: every overlay passes a server-side dry run on the real
// control plane, the Prometheus Operator's objects against the Operator's
// own CRDs (installed for the test); and the service account's rights are
// enough for gpuops serve to judge and watch (it runs with that account's
// token).
func TestDeployManifests(t *testing.T) {
	env := testcluster.New(t)
	env.Timeout = patience
	ns := kube.DefaultNamespace
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	operatorCRDs(t, env)

	// Every object of each kustomization, as the server's dry run returns it:
	// kind, namespace (none for cluster-scoped ones), name.
	base := []string{
		"ServiceAccount gpu-operator gpuops-judge-serve",
		"Role gpu-operator gpuops-judge-serve", "RoleBinding gpu-operator gpuops-judge-serve",
		"ClusterRole  gpuops-judge-serve", "ClusterRoleBinding  gpuops-judge-serve",
		"Service gpu-operator gpuops", "Deployment gpu-operator gpuops",
	}
	for dir, want := range map[string][]string{
		"kustomize/deploy/base":                base,
		"kustomize/deploy/prometheus-operator": append(slices.Clone(base), "PrometheusRule gpu-operator gpuops", "ServiceMonitor gpu-operator gpuops"),
		"kustomize/deploy/events":              append(slices.Clone(base), "Role default gpuops-events", "RoleBinding default gpuops-events"),
		"kustomize/deploy/alerts":              {"ConfigMap gpu-operator gpuops-alerts"},
		"kustomize/deploy/grafana":             {"ConfigMap gpu-operator gpuops-dashboard"},
	} {
		got := dryRun(t, env, filepath.Join("..", "..", dir))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the server's dry run has\n%s\nwant\n%s", dir, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	events := env.Kubectl(t, "kustomize", "../../kustomize/deploy/events")
	if !strings.Contains(events, "- --events") {
		t.Errorf("the events overlay does not pass --events:\n%s", events)
	}

	// The rights for real: serve with a service account's token.
	for _, o := range operand.Lab {
		ds := testcluster.DaemonSet(ns, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "64Mi")
		if _, err := env.Client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	(&fleet{env: env}).gpuNode(t, "a")
	judged := func(m gpuopstest.Scrape) bool { return m.IsOne("gpuops_nodes", map[string]string{"state": "ok"}) }

	// The judges' rights alone (list, no watch): the first verdict comes
	// from plain LISTs, and then every watch fails, is retried and counted,
	// which is what GpuopsWatchFailing fires on.
	srv := serveAs(t, env, "../../kustomize/rbac/judge", "gpuops-judge")
	srv.WaitFor(t, "the node judged and the failed watches counted", func(m gpuopstest.Scrape) bool {
		failed, _ := m.Value("gpuops_watch_errors_total", map[string]string{"resource": "pods"})
		return judged(m) && failed > 0
	})
	srv.Stderr.Expect(t, `pods: .*forbidden.*; retrying`)

	// The base's rights: judged and watched, not one error. The upgrade
	// controller's Events live in namespace default, which only the events
	// overlay opens: serve says once that it goes without them.
	srv = serveAs(t, env, "../../kustomize/deploy/rbac", "gpuops-judge-serve")
	srv.WaitFor(t, "the node judged with the base's rights", judged)
	expectServeRights(t, srv.Stderr.All())
}

// operatorCRDs installs the Prometheus Operator's CRDs of ServiceMonitor
// and PrometheusRule, from its source module, until the test ends.
func operatorCRDs(t *testing.T, env *testcluster.Env) {
	t.Helper()
	crds := filepath.Join(moduleDir(t, prometheusOperator), "example", "prometheus-operator-crd")
	for _, kind := range []string{"servicemonitors", "prometheusrules"} {
		env.Kubectl(t, "apply", "--server-side", "-f", filepath.Join(crds, "monitoring.coreos.com_"+kind+".yaml"))
		t.Cleanup(func() { env.Kubectl(t, "delete", "crd", kind+".monitoring.coreos.com") })
	}
	env.Kubectl(t, "wait", "--for", "condition=established", "--timeout", "60s",
		"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
}

// expectServeRights checks the lines serve wrote on stderr once it has
// judged with serve's rights (kustomize/deploy/rbac's, the chart's): no
// watch failed, only the upgrade controller's Events, which live in
// namespace default and only the events overlay opens, are gone without,
// said once. So: the serving line, that note and the ready line.
func expectServeRights(t *testing.T, lines []string) {
	t.Helper()
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "events: not watched, the driver upgrade verdict goes without them: ") || !strings.Contains(lines[1], "forbidden") {
		t.Errorf("serve with serve's rights: stderr %q, want the serving line, the one note on events and the ready line", lines)
	}
}

// serveAs applies a kustomization of rights for real and runs gpuops serve
// with a token of its service account, on the test's nodes.
func serveAs(t *testing.T, env *testcluster.Env, rbac, account string) *gpuopstest.Server {
	t.Helper()
	env.Kubectl(t, "apply", "--server-side", "-k", rbac)
	t.Cleanup(func() { env.Kubectl(t, "delete", "-k", rbac, "--ignore-not-found") })
	return serve(t, "--kubeconfig", env.AccountKubeconfig(t, kube.DefaultNamespace, account), "-n", kube.DefaultNamespace,
		"-l", testcluster.LabelTestID+"="+env.ID, "--discover", "--all-rules")
}

// dryRun applies a kustomization with a server-side dry run and lists what
// the server returns as "kind namespace name", sorted.
func dryRun(t *testing.T, env *testcluster.Env, dir string) []string {
	t.Helper()
	type object struct {
		Kind     string
		Metadata struct{ Namespace, Name string }
	}
	var out struct {
		object
		Items []object // when there are several
	}
	if err := json.Unmarshal([]byte(env.Kubectl(t, "apply", "--server-side", "--dry-run=server", "-k", dir, "-o", "json")), &out); err != nil {
		t.Fatal(err)
	}
	if out.Kind != "List" {
		out.Items = []object{out.object}
	}
	var got []string
	for _, o := range out.Items {
		got = append(got, o.Kind+" "+o.Metadata.Namespace+" "+o.Metadata.Name)
	}
	slices.Sort(got)
	return got
}
