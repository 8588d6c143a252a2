package gpuopstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
func (c Cluster) Run(t testing.TB, args ...string) Output {
	t.Helper()
	return Run(t, c.Env, Binary(t), c.Args(args...)...)
}

// Want runs gpuops against the cluster and stops the test unless it exits
// with code, showing what it printed.
func (c Cluster) Want(t testing.TB, code int, args ...string) Output {
	t.Helper()
	r := c.Run(t, args...)
	if r.Code != code {
		t.Fatalf("gpuops %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

// SameFrom runs args against c and, with no cluster, with --from each of
// from, and fails where one prints or exits otherwise, compared as v makes
// two runs comparable (the clock's instants and ages aside: the live run is
// later). missing, if not nil, picks the stderr lines of --from's left out:
// what an input says it does not hold.
func (c Cluster) SameFrom(t testing.TB, args []string, v Volatile, missing func(line string) bool, from ...string) {
	t.Helper()
	live := c.Run(t, args...)
	want := v.Comparable(args, live.Stdout+"\x00"+live.Stderr)
	for _, f := range from {
		got := Run(t, nil, Binary(t), append(slices.Clone(args), "--from", f)...)
		stderr := got.Stderr
		if missing != nil {
			stderr = strings.Join(slices.DeleteFunc(strings.SplitAfter(stderr, "\n"), missing), "")
		}
		if got.Code != live.Code || v.Comparable(args, got.Stdout+"\x00"+stderr) != want {
			t.Errorf("gpuops %s --from %s: exit %d, live %d\n--- from\n%s%s\n--- live\n%s%s", strings.Join(args, " "), filepath.Base(f),
				got.Code, live.Code, got.Stdout, got.Stderr, live.Stdout, live.Stderr)
		}
	}
}

// FromIsLive collects c into a bundle once and checks that each case prints
// from it what it prints live (SameFrom).
func (c Cluster) FromIsLive(t testing.TB, cases []Golden) {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "bundle.yaml")
	c.Want(t, 0, "collect", "-o", bundle)
	for _, g := range cases {
		c.SameFrom(t, g.Args, Volatile{}, nil, bundle)
	}
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
func (r Output) OneLineError(t testing.TB, want string) {
	t.Helper()
	if r.Code != 2 || r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "error: ") || !strings.Contains(r.Stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, one line 'error: …%s…'", r.Code, r.Stdout, r.Stderr, want)
	}
}

// Kubectl runs kubectl (the lab's, on PATH) against the cluster, for a run
// the test expects may fail (a webhook's refusal); testcluster's
// Env.Kubectl is the one for runs that must succeed.
func (c Cluster) Kubectl(t testing.TB, args ...string) Output {
	t.Helper()
	return Run(t, c.Env, "kubectl", c.Args(args...)...)
}
