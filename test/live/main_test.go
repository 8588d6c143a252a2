// Package live_test runs gpuops watch and gpuops serve against a real
// control plane and changes the cluster under them: each finding must
// appear in the watch lines and the metrics, and go again. It also stops the
// API server (SIGSTOP, as test/faults does), so it always runs on a cluster
// of its own.
package live_test

import (
	"context"
	"io"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

func TestMain(m *testing.M) {
	os.Unsetenv(testcluster.EnvKubeconfig) // never a shared cluster
	// The in-process tracker's informers log a watch cut short at its end.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	testcluster.Main(m)
}

// patience bounds each wait for the cluster and gpuops to get somewhere.
const patience = gpuopstest.Patience

// fleet is a test's namespace with the lab's five operand DaemonSets, and
// the arguments that point gpuops at it and at the test's nodes only.
type fleet struct {
	env  *testcluster.Env
	args []string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	env := testcluster.New(t)
	env.Timeout = patience
	for _, o := range operand.Lab {
		ds := testcluster.DaemonSet(env.Namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "64Mi")
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &fleet{env: env, args: []string{"--kubeconfig", env.Kubeconfig, "-n", env.Namespace,
		"-l", testcluster.LabelTestID + "=" + env.ID, "--all-rules"}}
}

// gpuNode adds a node that asks for every operand of the lab.
func (f *fleet) gpuNode(t *testing.T, suffix string, opts ...testcluster.NodeOption) string {
	t.Helper()
	labels := map[string]string{}
	for _, o := range operand.Lab {
		labels[o.LabelKey()] = "true"
	}
	name := f.env.NodeName(suffix)
	f.env.AddNode(t, name, labels, opts...)
	return name
}

// serve runs gpuops serve with args in the background (the kit's).
func serve(t *testing.T, args ...string) *gpuopstest.Server {
	t.Helper()
	return gpuopstest.Cluster{}.Serve(t, append([]string{"serve"}, args...)...)
}
