package gpuopstest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/internal/testcluster"
)

// Cluster is where a test points gpuops, as a user does with --kubeconfig
// and -n ahead of the command.
type Cluster struct {
	Kubeconfig string   // empty: none given (KUBECONFIG in Env, or none at all)
	Namespace  string   // empty: the kubeconfig's
	Env        []string // more environment variables, KEY=VALUE
}

// On is the test cluster of env, in env's namespace.
func On(env *testcluster.Env) Cluster {
	return Cluster{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace}
}

// Args are the command line of a run of args against the cluster.
func (c Cluster) Args(args ...string) []string {
	var out []string
	if c.Kubeconfig != "" {
		out = append(out, "--kubeconfig", c.Kubeconfig)
	}
	if c.Namespace != "" {
		out = append(out, "-n", c.Namespace)
	}
	return append(out, args...)
}

// Run runs gpuops against the cluster (Run).
func (c Cluster) Run(t testing.TB, args ...string) Result {
	t.Helper()
	return Run(t, c.Env, Binary(t), c.Args(args...)...)
}

// Want runs gpuops against the cluster and stops the test unless it exits
// with code, showing what it printed.
func (c Cluster) Want(t testing.TB, code int, args ...string) Result {
	t.Helper()
	r := c.Run(t, args...)
	if r.Code != code {
		t.Fatalf("gpuops %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

// WantError runs gpuops against the cluster and checks that it fails as a
// command that cannot do its work does (OneLineError).
func (c Cluster) WantError(t testing.TB, want string, args ...string) {
	t.Helper()
	c.Run(t, args...).OneLineError(t, want)
}

// Command is gpuops against the cluster as a process the test starts and
// stops itself (a watch, a server).
func (c Cluster) Command(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(Binary(t), c.Args(args...)...)
	cmd.Env = append(os.Environ(), c.Env...)
	return cmd
}

// OneLineError checks the contract of a failed command: exit 2, nothing on
// stdout, and one line on stderr, "error: " and then a message containing
// want: no stack trace, no library logging.
func (r Result) OneLineError(t testing.TB, want string) {
	t.Helper()
	if r.Code != 2 || r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "error: ") || !strings.Contains(r.Stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, one line 'error: …%s…'", r.Code, r.Stdout, r.Stderr, want)
	}
}

// Kubectl runs kubectl (the lab's, on PATH) against the cluster, for a run
// the test expects may fail (a webhook's refusal); testcluster's
// Env.Kubectl is the one for runs that must succeed.
func (c Cluster) Kubectl(t testing.TB, args ...string) Result {
	t.Helper()
	return Run(t, c.Env, "kubectl", c.Args(args...)...)
}
