// Package guard_test checks the guard rails on a real control plane: the
// admission policy of `gpuops guard` as the API server applies it to
// kubectl, and optout/optin's plans, refusals and ordered steps. The tests
// use the operator's fixed deploy-label keys and the guard is cluster-wide,
// so they do not run in parallel; each makes its own namespace and nodes.
package guard_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
	"github.com/gpuops/gpuops/pkg/settle"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

func ok(t *testing.T, what string, r gpuopstest.Output) gpuopstest.Output {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("%s: exit %d\nstdout %s\nstderr %s", what, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// deploy labels: each operand "true"; "name=value" for another value.
func deploy(names ...string) map[string]string {
	l := map[string]string{}
	for _, n := range names {
		k, v, found := strings.Cut(n, "=")
		if !found {
			v = "true"
		}
		l[operand.LabelPrefix+k] = v
	}
	return l
}

var fullStack = []string{operand.Driver, operand.ContainerToolkit, operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter}

// lab applies the lab's five DaemonSets into env's namespace and adds the
// nodes (name suffix to deploy labels), then waits until all has settled.
func lab(t *testing.T, env *testcluster.Env, nodes map[string][]string) map[string]string {
	t.Helper()
	env.Timeout = 3 * time.Minute // a loaded machine schedules slowly
	ctx := context.Background()
	names := map[string]string{}
	for suffix, ops := range nodes {
		name := env.NodeName(suffix)
		names[suffix] = name
		env.AddNode(t, name, nil)
		// gpuops's labels, as gpuops up sets them: optout and optin refuse
		// labels another field manager owns
		_, err := env.Client.CoreV1().Nodes().Apply(ctx, corev1ac.Node(name).WithLabels(deploy(ops...)), metav1.ApplyOptions{FieldManager: "gpuops"})
		if err != nil {
			t.Fatal(err)
		}
	}
	ms, err := render.Operands(gpuops.Kustomize, operand.Lab, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		var ds appsv1.DaemonSet
		if err := yaml.Unmarshal(m.YAML, &ds); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, &ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	settled(t, env)
	return names
}

// settled waits until the lab's DaemonSets in env's namespace have settled,
// their status included, so that what a test reads next stays still.
func settled(t *testing.T, env *testcluster.Env) {
	t.Helper()
	var names []string
	for _, o := range operand.Lab {
		names = append(names, o.DaemonSet)
	}
	if _, err := settle.Wait(context.Background(), env.Client, env.Namespace, names, settle.Options{Timeout: env.Timeout}); err != nil {
		t.Fatal(err)
	}
}

// state is what a refused command must leave alone: every test node's
// labels and resourceVersion, every DaemonSet's resourceVersion and status.
type state struct {
	nodes      map[string]string // name -> resourceVersion + labels
	daemonSets map[string]string
}

func stateOf(t *testing.T, env *testcluster.Env) state {
	t.Helper()
	ctx := context.Background()
	st := state{nodes: map[string]string{}, daemonSets: map[string]string{}}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.Set{testcluster.LabelTestID: env.ID}.String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		st.nodes[n.Name] = n.ResourceVersion + " " + fmt.Sprint(n.Labels)
	}
	dss, err := env.Client.AppsV1().DaemonSets(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dss.Items {
		st.daemonSets[d.Name] = fmt.Sprintf("%s %+v", d.ResourceVersion, d.Status)
	}
	return st
}

func sameState(t *testing.T, what string, before, after state) {
	t.Helper()
	if !maps.Equal(before.nodes, after.nodes) || !maps.Equal(before.daemonSets, after.daemonSets) {
		t.Errorf("%s changed the cluster:\nbefore %v\nafter  %v", what, before, after)
	}
}

// labelsOf reads a node's deploy labels.
func labelsOf(t *testing.T, env *testcluster.Env, node string) map[string]string {
	t.Helper()
	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range n.Labels {
		if strings.HasPrefix(k, operand.LabelPrefix) {
			out[k] = v
		}
	}
	return out
}
