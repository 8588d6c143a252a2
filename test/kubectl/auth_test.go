package kubectl_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuops/gpuops/internal/gpuopstest"
)

// --as impersonates as kubectl does: the judge RBAC's service account may
// judge; a user it does not name may not, and up as the judge is refused
// before anything changes, by the impersonated user's rights.
func TestImpersonation(t *testing.T) {
	t.Parallel()
	j := newJudged(t)
	ns := j.env.Namespace
	judge := "system:serviceaccount:" + ns + ":" + j.serviceAccount
	kc := []string{"--kubeconfig", j.env.Kubeconfig}

	wantOK(t, "audit --as the judge", run(t, nil, append(append(kc, "--as", judge), j.audit()...)...), j.auditOK())
	// after the command, as kubectl takes it
	wantOK(t, "audit ... --as the judge", run(t, nil, append(append(kc, j.audit()...), "--as="+judge)...), j.auditOK())

	stranger := "jane-" + j.env.ID
	wantError(t, "audit --as a stranger", run(t, nil, append(append(kc, "--as", stranger), j.audit()...)...),
		"forbidden", `User "`+stranger+`" cannot list resource`)

	spec := filepath.Join(t.TempDir(), "lab.yaml")
	gpuopstest.WriteFile(t, spec, fmt.Sprintf("namespace: %s\nnodes:\n- name: %s\n  operands: {driver: true}\n", ns, j.node))
	wantError(t, "up --as the judge", run(t, nil, append(kc, "--as", judge, "up", "--lab", spec, "--workdir", t.TempDir())...),
		"forbidden: needs get namespaces; get,watch,patch nodes")
}

// --server and --token, with no kubeconfig anywhere: a service account's
// token is enough, as for kubectl.
func TestServerAndToken(t *testing.T) {
	t.Parallel()
	j := newJudged(t)
	server, tok, ca := j.env.RESTConfig.Host, j.env.Token(t, j.env.Namespace, j.serviceAccount), caFile(t, j.env)
	env := noKubeconfig(t)

	wantOK(t, "--server --token", run(t, env, append([]string{"--server", server, "--token", tok, "--certificate-authority", ca}, j.audit()...)...), j.auditOK())
	wantOK(t, "-s --token after the command", run(t, env, append(j.audit(), "-s", server, "--token="+tok, "--certificate-authority", ca)...), j.auditOK())
	wantError(t, "--server --token of nobody", run(t, env, append([]string{"--server", server, "--token", "not-a-token", "--certificate-authority", ca}, j.audit()...)...),
		"Unauthorized")
	// the same without --server: no cluster, and nothing is dialled
	wantError(t, "--token alone", run(t, env, append([]string{"--token", tok}, j.audit()...)...),
		"no cluster configured", "no --server, not in a pod")
}

// An exec credential plugin (as EKS, GKE, AKS and OIDC login helpers are)
// gets the token: client-go runs it with KUBERNETES_EXEC_INFO and reads
// the ExecCredential it prints.
func TestExecCredentialPlugin(t *testing.T) {
	t.Parallel()
	j := newJudged(t)
	dir := t.TempDir()
	plugin, called := filepath.Join(dir, "credential-helper"), filepath.Join(dir, "exec-info.json")
	gpuopstest.WriteFile(t, plugin, fmt.Sprintf(`#!/bin/sh
printf '%%s' "$KUBERNETES_EXEC_INFO" > %q
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%%s"}}' "$TOKEN"
`, called))
	if err := os.Chmod(plugin, 0o755); err != nil {
		t.Fatal(err)
	}
	kc := kubeconfigWith(t, j.env, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion:      "client.authentication.k8s.io/v1",
		Command:         plugin,
		Env:             []clientcmdapi.ExecEnvVar{{Name: "TOKEN", Value: j.env.Token(t, j.env.Namespace, j.serviceAccount)}},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}})

	wantOK(t, "exec plugin", run(t, noKubeconfig(t), append([]string{"--kubeconfig", kc}, j.audit()...)...), j.auditOK())
	info, err := os.ReadFile(called)
	if err != nil || !strings.Contains(string(info), `"kind":"ExecCredential"`) {
		t.Errorf("the plugin was not run by client-go's exec protocol: %q (%v)", info, err)
	}
}

// In a pod, gpuops uses the pod's service account as kubectl does:
// KUBERNETES_SERVICE_HOST/PORT and the token and CA that the kubelet mounts
// at /var/run/secrets/kubernetes.io/serviceaccount. The test mounts them
// there in a mount namespace of the gpuops process only (unshare).
func TestInClusterConfig(t *testing.T) {
	t.Parallel()
	j := newJudged(t)
	u, err := url.Parse(j.env.RESTConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	sa := t.TempDir()
	gpuopstest.WriteFile(t, filepath.Join(sa, "token"), j.env.Token(t, j.env.Namespace, j.serviceAccount))
	ca, err := os.ReadFile(caFile(t, j.env))
	if err != nil {
		t.Fatal(err)
	}
	gpuopstest.WriteFile(t, filepath.Join(sa, "ca.crt"), string(ca))
	gpuopstest.WriteFile(t, filepath.Join(sa, "namespace"), j.env.Namespace)
	env := append(noKubeconfig(t), "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port())

	inPod := func(args ...string) []string {
		// a private /var/run holding the service account's files, then gpuops
		script := `run=$(readlink -f /var/run) && mount -t tmpfs tmpfs "$run" &&
mkdir -p "$run/secrets/kubernetes.io/serviceaccount" && cp "$0"/* "$run/secrets/kubernetes.io/serviceaccount/" && exec "$@"`
		return append([]string{"--map-root-user", "--mount", "sh", "-c", script, sa, gpuopstest.Binary(t)}, args...)
	}
	r := gpuopstest.Run(t, env, "unshare", inPod(j.audit()...)...)
	wantOK(t, "in-cluster", r, j.auditOK())

	// the same environment without the mounted token is refused, saying why
	wantError(t, "in-cluster without a token", run(t, env, j.audit()...),
		"in-cluster config fails", "/var/run/secrets/kubernetes.io/serviceaccount/token")
}
