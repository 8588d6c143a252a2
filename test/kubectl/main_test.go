// Package kubectl_test runs gpuops the way kubectl users do, on a real
// control plane: every way kubectl authenticates (impersonation, --server
// and --token, an exec credential plugin, a pod's service account), as the
// kubectl plugin `kubectl gpuops`, with shell completion driven in real
// bash, zsh and fish and through kubectl's own plugin completion, and
// `gpuops version` against the server. Each test has its own namespace and
// nodes and selects them by its ID, so the tests run in parallel.
package kubectl_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// judged is a test's namespace and one node of its own, with the shipped
// read-only judge RBAC (kustomize/rbac/judge) for a service account of the
// test's, applied with kubectl as a user would.
type judged struct {
	env            *testcluster.Env
	node           string
	serviceAccount string // gpuops-judge-<ID>, in env.Namespace
}

func newJudged(t *testing.T) *judged {
	t.Helper()
	env := testcluster.New(t)
	j := &judged{env: env, serviceAccount: "gpuops-judge-" + env.ID}
	applyJudgeRBAC(t, env, "-"+env.ID)
	j.node = env.AddNode(t, env.NodeName("n"), nil).Name
	return j
}

// audit is the judge every authentication test runs, and what it prints
// when it could read the cluster: the test's node has no deploy label.
func (j *judged) audit() []string {
	return []string{"audit", "-n", j.env.Namespace, "-l", testcluster.LabelTestID + "=" + j.env.ID}
}

func (j *judged) auditOK() string { return j.node + " OK\n" }

// applyJudgeRBAC applies kustomize/rbac/judge (as the binary embeds it)
// through an overlay into env's namespace, the cluster-wide objects
// suffixed, with `kubectl apply -k`.
func applyJudgeRBAC(t *testing.T, env *testcluster.Env, suffix string) {
	t.Helper()
	dir := t.TempDir()
	judge, err := fs.Sub(gpuops.Kustomize, "kustomize/rbac/judge")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "base"), judge); err != nil {
		t.Fatal(err)
	}
	gpuopstest.WriteFile(t, filepath.Join(dir, "overlay", "kustomization.yaml"), fmt.Sprintf(
		"namespace: %s\nnameSuffix: %s\nresources:\n- ../base\n", env.Namespace, suffix))
	env.Kubectl(t, "apply", "-k", filepath.Join(dir, "overlay"))
	t.Cleanup(func() {
		// the namespace takes its own objects; these two are cluster-wide
		name := "gpuops-judge" + suffix
		cmd := exec.Command(kubectlPath(t), "--kubeconfig", env.Kubeconfig, "delete", "--ignore-not-found",
			"clusterrole/"+name, "clusterrolebinding/"+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("kubectl delete: %v\n%s", err, out)
		}
	})
}

// caFile writes the cluster's CA certificate to a file.
func caFile(t *testing.T, env *testcluster.Env) string {
	t.Helper()
	if env.RESTConfig.CAFile != "" {
		return env.RESTConfig.CAFile
	}
	if len(env.RESTConfig.CAData) == 0 {
		t.Fatal("the test cluster's kubeconfig has no CA certificate")
	}
	path := filepath.Join(t.TempDir(), "ca.crt")
	gpuopstest.WriteFile(t, path, string(env.RESTConfig.CAData))
	return path
}

// kubeconfigWith writes a kubeconfig for the test cluster whose only user
// authenticates as auth says.
func kubeconfigWith(t *testing.T, env *testcluster.Env, auth *clientcmdapi.AuthInfo) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = &clientcmdapi.Cluster{Server: env.RESTConfig.Host, CertificateAuthority: caFile(t, env)}
	cfg.AuthInfos["user"] = auth
	cfg.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "user"}
	cfg.CurrentContext = "lab"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// noKubeconfig is an environment in which neither $KUBECONFIG nor
// ~/.kube/config names a cluster.
func noKubeconfig(t *testing.T) []string {
	return []string{"KUBECONFIG=", "HOME=" + t.TempDir()}
}

// run runs the gpuops binary with extra environment variables.
func run(t *testing.T, env []string, args ...string) gpuopstest.Output {
	t.Helper()
	return gpuopstest.Run(t, env, gpuopstest.Binary(t), args...)
}

func kubectlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on PATH (go tool task test puts .lab/bin there): %v", err)
	}
	return p
}

// wantOK checks a run that succeeded with exactly stdout and nothing on stderr.
func wantOK(t *testing.T, what string, r gpuopstest.Output, stdout string) {
	t.Helper()
	if r.Code != 0 || r.Stdout != stdout || r.Stderr != "" {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 0, stdout %q", what, r.Code, r.Stdout, r.Stderr, stdout)
	}
}

// wantError checks the contract of a failed command: exit 2, nothing on
// stdout, one line on stderr, "error: ..." containing each of want.
func wantError(t *testing.T, what string, r gpuopstest.Output, want ...string) {
	t.Helper()
	ok := r.Code == 2 && r.Stdout == "" && strings.Count(r.Stderr, "\n") == 1 && strings.HasPrefix(r.Stderr, "error: ")
	for _, w := range want {
		ok = ok && strings.Contains(r.Stderr, w)
	}
	if !ok {
		t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, one line 'error: …' with %q", what, r.Code, r.Stdout, r.Stderr, want)
	}
}
