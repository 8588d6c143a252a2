package multicluster_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
)

// The contexts of the merged kubeconfig.
const (
	healthy   = "healthy"   // a lab whose every node runs what it asks for
	broken    = "broken"    // a lab whose second node runs the device plugin without the toolkit
	down      = "down"      // an API server that refuses connections
	forbidden = "forbidden" // the healthy lab, as a service account that may read nothing
)

// fleet is the clusters of a test, one kubeconfig for them all.
type fleet struct {
	// gpuops runs on the merged kubeconfig, named by KUBECONFIG as a
	// user's is, in the labs' namespace.
	gpuops     gpuopstest.Cluster
	namespace  string // the labs' namespace, the same in both clusters
	gpu0, gpu1 string // node names, the same in both clusters
}

// newFleet starts two clusters, provisions a lab in each with gpuops up,
// and writes the merged kubeconfig; all of it goes when t ends.
func newFleet(t *testing.T) *fleet {
	t.Helper()
	a, b := testcluster.New(t), testcluster.NewSecond(t)
	f := &fleet{namespace: a.Namespace, gpu0: a.NodeName("gpu-0"), gpu1: a.NodeName("gpu-1")}
	gpus := testcluster.WithCapacity(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}) // as a device plugin registers them
	for _, env := range []*testcluster.Env{a, b} {                                                   // labelled by up, as the lab's nodes
		env.AddNode(t, f.gpu0, nil, gpus)
		env.AddNode(t, f.gpu1, nil, gpus)
	}
	// b's namespace is a's name, made there by up.
	t.Cleanup(func() {
		err := b.Client.CoreV1().Namespaces().Delete(context.Background(), f.namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s of the second cluster: %v", f.namespace, err)
		}
	})
	all := "    driver: true\n    container-toolkit: true\n    device-plugin: true\n    gpu-feature-discovery: true\n    dcgm-exporter: true\n"
	labs := map[*testcluster.Env]string{
		a: "  operands:\n" + all + "- name: " + f.gpu1 + "\n  labels:\n    nvidia.com/gpu.present: \"true\"\n  operands:\n" +
			strings.Replace(all, "driver: true", "driver: false", 1),
		b: "  operands:\n" + all + "- name: " + f.gpu1 + "\n  labels:\n    nvidia.com/gpu.present: \"true\"\n  operands:\n" +
			"    driver: true\n    container-toolkit: false\n    device-plugin: true\n",
	}
	for env, rest := range labs {
		dir := t.TempDir()
		spec := gpuopstest.WriteFile(t, filepath.Join(dir, "lab.yaml"),
			"namespace: "+f.namespace+"\nnodes:\n- name: "+f.gpu0+"\n  labels:\n    nvidia.com/gpu.present: \"true\"\n"+rest)
		gpuopstest.Cluster{Kubeconfig: env.Kubeconfig}.Want(t, 0, "up", "--lab", spec, "--workdir", dir)
	}
	f.gpuops = gpuopstest.Cluster{Namespace: f.namespace, Env: []string{"KUBECONFIG=" + mergedKubeconfig(t, a, b)}}
	return f
}

// mergedKubeconfig writes one kubeconfig with the four contexts.
func mergedKubeconfig(t *testing.T, a, b *testcluster.Env) string {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, env := range map[string]*testcluster.Env{healthy: a, broken: b} {
		cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cur := cfg.Contexts[cfg.CurrentContext]
		out.Clusters[name], out.AuthInfos[name] = cfg.Clusters[cur.Cluster], cfg.AuthInfos[cur.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	// A port nothing listens on: connection refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	out.Clusters[down] = &clientcmdapi.Cluster{Server: "https://" + closed, InsecureSkipTLSVerify: true}
	out.AuthInfos[down] = &clientcmdapi.AuthInfo{Token: "none"}
	out.Contexts[down] = &clientcmdapi.Context{Cluster: down, AuthInfo: down}
	// A service account without a single right.
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}
	if _, err := a.Client.CoreV1().ServiceAccounts(a.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out.AuthInfos[forbidden] = &clientcmdapi.AuthInfo{Token: a.Token(t, a.Namespace, sa.Name)}
	out.Contexts[forbidden] = &clientcmdapi.Context{Cluster: healthy, AuthInfo: forbidden}
	out.CurrentContext = healthy
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// alone runs a command on one context, as a user does without --contexts.
func (f *fleet) alone(t *testing.T, context string, args ...string) gpuopstest.Output {
	t.Helper()
	return f.gpuops.Run(t, append(args, "--context", context)...)
}

// judge is one judging command as the tests run it.
type judge struct {
	args []string
	// exit across healthy and broken: the broken lab's device plugin
	// without the toolkit is a finding for all but audit (nothing asked for
	// is missing), matrix and upgrades.
	exit int
}

func (f *fleet) judges() []judge {
	return []judge{
		{[]string{"audit"}, 0},
		{[]string{"order-check", f.gpu1}, 1},
		{[]string{"matrix"}, 0},
		{[]string{"summary"}, 1},
		{[]string{"health"}, 1},
		{[]string{"upgrades"}, 0},
	}
}

func (j judge) String() string { return strings.Join(j.args, " ") }

func with(args []string, more ...string) []string {
	return append(append([]string{}, args...), more...)
}

func errorf(t *testing.T, r gpuopstest.Output, format string, args ...any) {
	t.Helper()
	t.Errorf(format+"\nstdout:\n%s\nstderr:\n%s", append(args, r.Stdout, r.Stderr)...)
}

// contextsList is the value of --contexts.
func contextsList(names ...string) string { return strings.Join(names, ",") }
