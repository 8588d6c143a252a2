package testcluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubectl runs kubectl (the lab's, on PATH) as the cluster's admin and
// fails the test unless it succeeds; it returns the combined output.
func (e *Env) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", e.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TokenKubeconfig writes a kubeconfig in a temporary folder of the test
// that points at server with a bearer token, not checking the server's
// certificate (a service account's token, or a fake server's), and returns
// its path.
func TokenKubeconfig(t testing.TB, server, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Token is a short-lived token (TokenRequest, one hour) of a service
// account, to run a command with its rights and no more.
func (e *Env) Token(t testing.TB, namespace, serviceAccount string) string {
	t.Helper()
	expiry := int64(3600)
	tok, err := e.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", namespace, serviceAccount, err)
	}
	return tok.Status.Token
}

// AccountKubeconfig is a kubeconfig (TokenKubeconfig) that authenticates
// to the cluster as the service account.
func (e *Env) AccountKubeconfig(t testing.TB, namespace, serviceAccount string) string {
	t.Helper()
	return TokenKubeconfig(t, e.RESTConfig.Host, e.Token(t, namespace, serviceAccount))
}
