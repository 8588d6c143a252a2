package rehearsal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/rehearsal"
)

// offerCauses are the health causes each offer scenario must make gpuops
// name, in the order of its table: every cause of how a node offers its
// GPUs, each on the real control plane.
var offerCauses = map[string][]string{
	rehearsal.Sharing: {health.SharingNotApplied, health.SharingConfigUnknown, health.MPSDaemonNotReady},
	rehearsal.MIG:     {health.MIGStuck, health.MIGLayoutMismatch, health.MIGFailed, health.MIGConfigUnknown},
	rehearsal.DRA:     {health.DevicesNotPublished, health.PoolIncomplete, health.DevicesTainted},
}

// TestOfferRehearsals runs each offer scenario on a lab of the test's own
// (nodes a, b, c with a driver, host, cpu) and checks, at every step, what
// gpuops health says as a user runs it: the case's cause on the node while
// it is broken, READY once healed, every other GPU node READY throughout.
// Then the cluster is as the lab left it: up, reset and the lab with the
// scenario run again. Not parallel: the ClusterPolicy is cluster-wide.
func TestOfferRehearsals(t *testing.T) {
	for _, name := range []string{rehearsal.Sharing, rehearsal.MIG, rehearsal.DRA} {
		t.Run(name, func(t *testing.T) { rehearseOffer(t, name) })
	}
}

func rehearseOffer(t *testing.T, name string) {
	r := newRig(t, false)
	g, env, ctx := r.g, r.g.env, context.Background()
	a := g.names["a"]
	before, err := env.Client.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	judging := rehearsal.JudgingOf(name, env.Namespace)
	cases := map[string]rehearsal.Case{}
	for _, c := range rehearsal.Cases(name) {
		cases[c.Name] = c
	}
	var nodes, causes []string
	for _, n := range r.lab.Nodes {
		nodes = append(nodes, n.Name)
	}
	err = rehearsal.RunOffer(ctx, env.Client, dyn, name, rehearsal.Options{Namespace: env.Namespace, Nodes: nodes, Timeout: env.Timeout,
		Step: func(ctx context.Context, s rehearsal.Step) error {
			at := fmt.Sprintf("step %d (%s)", s.N, s.What)
			if s.Node != "" && s.Node != a {
				t.Fatalf("%s: on %s, want %s, the first READY node", at, s.Node, a)
			}
			c, known := cases[s.Case]
			if s.Case != "" && !known {
				t.Fatalf("%s: case %q is not in the table", at, s.Case)
			}
			want := map[string]string{g.names["b"]: ok, g.names["c"]: ok, g.names["host"]: ok, a: ok}
			if s.Broken {
				want[a] = c.Cause + "/" + c.Operand
				causes = append(causes, c.Cause)
			}
			args := g.args("health", "--stuck-after", judging.StuckAfter.String())
			res := g.gpuops.Run(t, append(args, "-o", "json")...)
			var hs struct{ Nodes []health.Node }
			if err := json.Unmarshal([]byte(res.Stdout), &hs); err != nil {
				t.Fatalf("%s: health -o json: exit %d, %v\n%s%s", at, res.Code, err, res.Stdout, res.Stderr)
			}
			got := map[string]string{}
			for _, h := range hs.Nodes {
				if h.Judged {
					got[h.Node] = causes1(h)
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("%s: health %v, want %v", at, got, want)
			}
			if code := map[bool]int{false: 0, true: 1}[s.Broken]; res.Code != code {
				t.Errorf("%s: health exit %d, want %d", at, res.Code, code)
			}
			if s.Broken {
				res := g.gpuops.Run(t, "health", "--stuck-after", judging.StuckAfter.String(), a)
				if line := a + " UNUSABLE " + c.Cause + " " + c.Operand; !strings.HasPrefix(res.Stdout, line) {
					t.Errorf("%s: health %s: %q, want %q", at, a, res.Stdout, line)
				}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(causes, offerCauses[name]) {
		t.Errorf("the scenario broke the node with %v, want %v", causes, offerCauses[name])
	}

	// As the lab left it.
	after, err := env.Client.CoreV1().Nodes().Get(ctx, a, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(after.Labels, before.Labels) {
		t.Errorf("labels of %s after the scenario:\n%v\nbefore:\n%v", a, after.Labels, before.Labels)
	}
	if !equalResources(after.Status.Capacity, before.Status.Capacity) || !equalResources(after.Status.Allocatable, before.Status.Allocatable) {
		t.Errorf("resources of %s after the scenario: %v / %v, before %v / %v", a, after.Status.Capacity, after.Status.Allocatable,
			before.Status.Capacity, before.Status.Allocatable)
	}
	if m, b := managerSet(after), managerSet(before); !maps.Equal(m, b) {
		t.Errorf("field managers of %s after the scenario: %v, before %v", a, m, b)
	}
	if _, err := dyn.Resource(rehearsal.PolicyGVR).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("clusterpolicies.nvidia.com still served after the scenario (%v)", err)
	}
	cms, err := env.Client.CoreV1().ConfigMaps(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || slices.ContainsFunc(cms.Items, func(c corev1.ConfigMap) bool { return c.Name != "kube-root-ca.crt" }) {
		t.Errorf("ConfigMaps left: %v (%v)", cms, err)
	}
	dss, err := env.Client.AppsV1().DaemonSets(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(dss.Items) != len(operand.Lab) {
		t.Errorf("DaemonSets after the scenario: %d, want the lab's %d (%v)", len(dss.Items), len(operand.Lab), err)
	}
	rs, err := env.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + a})
	if err != nil || len(rs.Items) > 0 {
		t.Errorf("ResourceSlices of %s left: %d (%v)", a, len(rs.Items), err)
	}
	if _, err := provision.Up(ctx, env.Client, r.lab, assets, r.ws, provision.Options{Timeout: env.Timeout}); err != nil {
		t.Fatalf("up after the scenario: %v", err)
	}
	if err := provision.Reset(ctx, env.Client, env.Namespace, provision.Options{Timeout: env.Timeout}); err != nil {
		t.Fatalf("reset after the scenario: %v", err)
	}

	// The command: the lab, then the scenario narrated, every case's cause
	// named on the node.
	file := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "lab.yaml"), r.spec)
	res := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig}.Run(t, "lab", "--lab", file, "--workdir", t.TempDir(), "--scenario", name)
	if res.Code != 0 || !strings.Contains(res.Stdout, ": clean-up: ") {
		t.Fatalf("lab --scenario %s: exit %d\n%s%s", name, res.Code, res.Stdout, res.Stderr)
	}
	for _, c := range rehearsal.Cases(name) {
		if line := "  " + a + " UNUSABLE " + c.Cause + " " + c.Operand; !strings.Contains(res.Stdout, line) {
			t.Errorf("lab --scenario %s: no line %q in\n%s", name, line, res.Stdout)
		}
	}
}

// causes1 is a node's health as offerCauses write it: code/operand of the
// root cause, "" when ready.
func causes1(h health.Node) string {
	if h.Cause == nil {
		return ok
	}
	return h.Cause.Code + "/" + h.Cause.Operand
}

func equalResources(a, b corev1.ResourceList) bool {
	return maps.EqualFunc(a, b, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
}

func managerSet(n *corev1.Node) map[string]bool {
	out := map[string]bool{}
	for _, e := range n.ManagedFields {
		out[e.Manager] = true
	}
	return out
}

// TestDRAWithoutResourceV1: on a cluster that does not serve
// resource.k8s.io/v1 (the real API server behind a proxy that hides the
// group), lab --scenario dra refuses before its first write: exit 2, one
// line, nothing changed.
func TestDRAWithoutResourceV1(t *testing.T) {
	env := testcluster.New(t)
	node := env.AddNode(t, env.NodeName("gpu"), nil)
	target, err := url.Parse(env.RESTConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = tr
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/apis/resource.k8s.io") {
			http.NotFound(w, req)
			return
		}
		req.Header.Del("Authorization") // the proxy authenticates as the test's admin
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	spec := fmt.Sprintf("namespace: %s\nnodes:\n- {name: %s, labels: {%s: \"true\"}, operands: {driver: true, container-toolkit: true, device-plugin: true, gpu-feature-discovery: true, dcgm-exporter: true}}\n",
		env.Namespace, node.Name, operand.GPUPresent)
	file := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "lab.yaml"), spec)
	dir := t.TempDir()
	ctx := context.Background()
	gpuops := gpuopstest.Cluster{Kubeconfig: testcluster.TokenKubeconfig(t, srv.URL, "unused")}
	gpuops.WantError(t, "the cluster does not serve resourceslices.resource.k8s.io/v1", "lab", "--lab", file, "--workdir", dir, "--scenario", rehearsal.DRA)

	dss, err := env.Client.AppsV1().DaemonSets(env.Namespace).List(ctx, metav1.ListOptions{})
	n, nerr := env.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	entries, _ := os.ReadDir(dir)
	// The lab would have labelled the node first (nvidia.com/gpu.present and the deploy labels).
	labelled := nerr == nil && slices.ContainsFunc(slices.Collect(maps.Keys(n.Labels)), func(k string) bool { return strings.HasPrefix(k, "nvidia.com/") })
	if err != nil || nerr != nil || len(dss.Items) > 0 || len(entries) > 0 || labelled {
		t.Errorf("lab --scenario dra changed something: %d DaemonSets, %d files, labels %v (%v, %v)", len(dss.Items), len(entries), n.Labels, err, nerr)
	}

}
