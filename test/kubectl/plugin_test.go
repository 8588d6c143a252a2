package kubectl_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	j := newJudged(t)
	env := []string{"PATH=" + pluginPath(t), "HOME=" + t.TempDir()}
	kubectl := func(args ...string) gpuopstest.Output {
		return gpuopstest.Run(t, env, "kubectl", args...)
	}

	wantOK(t, "kubectl gpuops audit", kubectl(append([]string{"gpuops", "--kubeconfig", j.env.Kubeconfig}, j.audit()...)...), j.auditOK())
	if r := kubectl("gpuops", "--help"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "NAME:\n   kubectl gpuops - ") ||
		!strings.Contains(r.Stdout, "USAGE:\n   kubectl gpuops [global options] command") {
		t.Errorf("kubectl gpuops --help: exit %d\n%s", r.Code, r.Stdout)
	}
	if r := kubectl("gpuops", "audit", "--help"); !strings.HasPrefix(r.Stdout, "NAME:\n   kubectl gpuops audit - ") {
		t.Errorf("kubectl gpuops audit --help:\n%s", r.Stdout)
	}
	wantError(t, "kubectl gpuops with a bad flag", kubectl("gpuops", "audit", "--no-such-flag"), "flag provided but not defined", "(see --help)")

	// kubectl's own completion asks kubectl_complete-gpuops, with every
	// word after the plugin's name
	r := kubectl("__complete", "gpuops", "optout", j.node, "")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "driver\tDaemonSet nvidia-driver-daemonset\n") || !strings.HasSuffix(r.Stdout, "\n:4\n") {
		t.Errorf("kubectl __complete gpuops optout NODE '': exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	complete := func(words ...string) []string {
		return bash(t, env, "source <(kubectl completion bash)", "__start_kubectl", append([]string{"kubectl"}, words...)...)
	}
	wantCandidates(t, "kubectl gpuops <TAB>", complete("gpuops", "ord"), "order-check")
	wantCandidates(t, "kubectl gpuops order-check <TAB>", complete("gpuops", "--kubeconfig", j.env.Kubeconfig, "order-check", "t-"+j.env.ID+"-"), j.node)
}

// gpuops version reads the server's version as kubectl version does.
func TestVersionOfTheServer(t *testing.T) {
	t.Parallel()
	env := testcluster.New(t)
	sv, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "--kubeconfig", env.Kubeconfig, "version")
	if r.Code != 0 || !strings.HasSuffix(r.Stdout, "\nServer Version: "+sv.GitVersion+"\n") {
		t.Errorf("version: exit %d, stdout %q, stderr %q; want Server Version: %s", r.Code, r.Stdout, r.Stderr, sv.GitVersion)
	}
	r = run(t, nil, "version", "-o", "json", "--kubeconfig", env.Kubeconfig)
	var v struct {
		ServerVersion struct{ GitVersion, Platform string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.ServerVersion.GitVersion != sv.GitVersion || v.ServerVersion.Platform != sv.Platform {
		t.Errorf("version -o json: %v\n%s", err, r.Stdout)
	}
}

// audit -o name names the nodes with a finding as kubectl -o name does, so
// they pipe into kubectl describe; a node without one is not named.
func TestAuditNamesPipeIntoKubectl(t *testing.T) {
	t.Parallel()
	env := testcluster.New(t)
	asks := env.AddNode(t, env.NodeName("asks"), map[string]string{operand.Lab.Driver().LabelKey(): "true"}).Name
	fine := env.AddNode(t, env.NodeName("fine"), nil).Name
	audit := []string{"--kubeconfig", env.Kubeconfig, "audit", "-n", env.Namespace, "-l", testcluster.LabelTestID + "=" + env.ID, "-o", "name"}
	if r := run(t, nil, audit...); r.Code != 1 || r.Stdout != "node/"+asks+"\n" {
		t.Errorf("audit -o name: exit %d, stdout %q, stderr %q; want exit 1, node/%s", r.Code, r.Stdout, r.Stderr, asks)
	}
	pipe := `"$0" "$@" | xargs kubectl --kubeconfig "$KUBECONFIG_OF_TEST" describe`
	environ := []string{"KUBECONFIG_OF_TEST=" + env.Kubeconfig, "PATH=" + filepath.Dir(kubectlPath(t)) + string(os.PathListSeparator) + os.Getenv("PATH")}
	r := gpuopstest.Run(t, environ, "bash", append([]string{"-c", pipe, gpuopstest.Binary(t)}, audit...)...)
	first, _, _ := strings.Cut(r.Stdout, "\n")
	if r.Code != 0 || strings.Join(strings.Fields(first), " ") != "Name: "+asks || strings.Contains(r.Stdout, fine) {
		t.Errorf("gpuops audit -o name | xargs kubectl describe: exit %d, stderr %q, stdout:\n%s", r.Code, r.Stderr, r.Stdout)
	}
}
