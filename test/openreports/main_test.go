// Package openreports_test checks gpuops' OpenReports on a real API server
// with the ClusterReport CRD of the reports-api module go.mod pins: the
// reports -o openreports prints apply and pass its schema, their results
// are audit's and order-check's verdicts one for one, and serve --reports,
// with the rights of kustomize/deploy/reports, creates, updates and
// deletes them as the verdicts change. The tests use the operator's fixed
// deploy-label keys and the namespace serve's rights name, so they do not
// run in parallel.
package openreports_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/openreports/reports-api/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/operand"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// ns is where the operands run: the namespace the deploy manifests' rights
// are for.
const ns = kube.DefaultNamespace

// crdFile is the ClusterReport CRD of the reports-api version go.mod pins.
func crdFile(t *testing.T) string {
	t.Helper()
	path, version, err := testcluster.ClusterReportCRD(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ClusterReport CRD of reports-api@%s", version)
	return path
}

// fleet is a test's nodes and the operands' DaemonSets, with the CRD in
// the cluster.
type fleet struct {
	env     *testcluster.Env
	reports *versioned.Clientset
	// nodes by role: ok (all it asks for runs), order (the device plugin
	// without the toolkit), missing (asks for dcgm-exporter, which has no
	// DaemonSet), odd (label values that warn: True, a MIG pause).
	ok, order, missing, odd string
	asked                   map[string][]string // node: the operands it asks for ("true")
}

func newFleet(t *testing.T) *fleet {
	env := testcluster.New(t)
	ctx := context.Background()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	env.Kubectl(t, "apply", "--server-side", "-f", crdFile(t))
	env.Kubectl(t, "wait", "--for", "condition=established", "--timeout", "60s", "crd/clusterreports.openreports.io")
	cs, err := versioned.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{env: env, reports: cs, ok: env.NodeName("ok"), order: env.NodeName("order"), missing: env.NodeName("missing"), odd: env.NodeName("odd")}
	t.Cleanup(func() {
		_ = cs.OpenreportsV1alpha1().ClusterReports().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: operand.ManagedByLabel + "=" + openreports.ManagedBy})
	})
	for _, o := range operand.Lab {
		if o.Name == operand.DCGMExporter {
			continue // asked for, never running: MISSING
		}
		ds := testcluster.DaemonSet(ns, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "64Mi")
		if _, err := env.Client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.AppsV1().DaemonSets(ns).Delete(context.Background(), o.DaemonSet, metav1.DeleteOptions{})
		})
	}
	deploy := func(ops ...string) map[string]string {
		l := map[string]string{operand.GPUPresent: "true"}
		for _, o := range ops {
			l[operand.LabelPrefix+o] = "true"
		}
		return l
	}
	f.asked = map[string][]string{
		f.ok:      {operand.Driver, operand.ContainerToolkit, operand.DevicePlugin, operand.GPUFeatureDiscovery},
		f.order:   {operand.Driver, operand.DevicePlugin},
		f.missing: {operand.Driver, operand.DCGMExporter},
		f.odd:     {},
	}
	for _, n := range []string{f.ok, f.order, f.missing} {
		env.AddNode(t, n, deploy(f.asked[n]...))
	}
	odd := deploy()
	odd[operand.LabelPrefix+operand.Driver] = "True"
	odd[operand.LabelPrefix+operand.GPUFeatureDiscovery] = operand.MIGChange.Value
	env.AddNode(t, f.odd, odd)
	f.waitForPods(t)
	return f
}

// waitForPods waits until every operand a node asks for and has a
// DaemonSet runs there.
func (f *fleet) waitForPods(t *testing.T) {
	t.Helper()
	f.env.WaitForPods(t, ns, func(pods []corev1.Pod) bool {
		pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { // only the operands' (not serve's Deployment's)
			return !slices.ContainsFunc(operand.Lab, func(o operand.Operand) bool { return p.Labels["app"] == o.DaemonSet })
		})
		for node, ops := range f.asked {
			want := len(ops)
			if slices.Contains(ops, operand.DCGMExporter) {
				want--
			}
			if testcluster.RunningOn(pods, node) != want {
				return false
			}
		}
		return true
	})
}

// gpuops runs a judge on the fleet's nodes.
func (f *fleet) gpuops(t *testing.T, args ...string) gpuopstest.Output {
	t.Helper()
	return f.cluster().Run(t, append(args, "--discover", "-l", testcluster.LabelTestID+"="+f.env.ID)...)
}

// order1 runs order-check of one node (it takes no selector).
func (f *fleet) order1(t *testing.T, node string, args ...string) gpuopstest.Output {
	t.Helper()
	return f.cluster().Run(t, append([]string{"order-check", node, "--discover"}, args...)...)
}

// cluster is the test cluster in the operands' namespace.
func (f *fleet) cluster() gpuopstest.Cluster {
	return gpuopstest.Cluster{Kubeconfig: f.env.Kubeconfig, Namespace: ns}
}

// get reads a report from the server.
func (f *fleet) get(t *testing.T, name string) (*v1alpha1.ClusterReport, error) {
	t.Helper()
	return f.reports.OpenreportsV1alpha1().ClusterReports().Get(context.Background(), name, metav1.GetOptions{})
}

// check is one result as the tests compare them: policy, node, rule,
// outcome.
type check struct{ policy, node, rule, result string }

func (c check) String() string { return fmt.Sprintf("%s/%s/%s=%s", c.policy, c.node, c.rule, c.result) }

func checksOf(rs []v1alpha1.ReportResult, policies ...string) []check {
	var out []check
	for _, r := range rs {
		if slices.Contains(policies, r.Policy) {
			out = append(out, check{r.Policy, r.Subjects[0].Name, r.Rule, string(r.Result)})
		}
	}
	slices.SortFunc(out, func(a, b check) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// poll retries cond until it holds or a minute passes.
func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute: %s", what, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// twoContexts writes a kubeconfig with the test cluster under two context
// names.
func (f *fleet) twoContexts(t *testing.T, a, b string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(f.env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.Contexts = map[string]*clientcmdapi.Context{a: cur, b: cur}
	cfg.CurrentContext = a
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}
