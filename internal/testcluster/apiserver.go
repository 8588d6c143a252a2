package testcluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// APIServer is the kube-apiserver process of a cluster this package started.
// Stop (SIGSTOP) keeps its port and state and answers nothing meanwhile, like
// a server that hangs or a network that drops; Resume (SIGCONT) lets it go on.
// Keep pauses short of the 10 s leader-election renew deadline of the
// controller manager and the scheduler. Stopping the server breaks every
// test sharing the cluster, so a package that does it runs on a cluster of
// its own (unset EnvKubeconfig in TestMain).
type APIServer struct{ pid int }

// OwnAPIServer finds the API server of the cluster behind env from its
// kubeconfig, <repo>/.lab/kubeconfig-<name> (hack/cluster.sh), and kwokctl's
// pid file of the cluster. It is resumed when the test ends, whatever happens.
func OwnAPIServer(t *testing.T, env *Env) *APIServer {
	t.Helper()
	dir, base := filepath.Split(env.Kubeconfig)
	name, ok := strings.CutPrefix(base, "kubeconfig-")
	if !ok || filepath.Base(dir) != ".lab" {
		t.Fatalf("kubeconfig %s is not one of hack/cluster.sh's dedicated clusters", env.Kubeconfig)
	}
	b, err := os.ReadFile(kwokctlFile(dir, name, "pids", "kube-apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	s := &APIServer{pid: pid}
	t.Cleanup(func() { s.Resume(t) })
	return s
}

func (s *APIServer) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(s.pid, sig); err != nil {
		t.Fatalf("signal %v to kube-apiserver %d: %v", sig, s.pid, err)
	}
}

// Stop pauses the server.
func (s *APIServer) Stop(t *testing.T) { t.Helper(); s.signal(t, syscall.SIGSTOP) }

// Resume lets a paused server go on.
func (s *APIServer) Resume(t *testing.T) { t.Helper(); s.signal(t, syscall.SIGCONT) }
