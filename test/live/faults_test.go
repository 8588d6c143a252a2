package live_test

import (
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

// blackhole is an API server address that accepts connections and never
// answers, and a kubeconfig that points at it.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn // held open, never read
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return testcluster.TokenKubeconfig(t, "https://"+ln.Addr().String(), "t")
}

// TestNotReadyBeforeTheFirstSync: serve answers at once, but /readyz says
// 503 and the metrics hold no verdict until the first full sync, which
// never comes from a server that does not answer.
func TestNotReadyBeforeTheFirstSync(t *testing.T) {
	srv := serve(t, "--kubeconfig", blackhole(t))
	for path, want := range map[string]int{"/readyz": http.StatusServiceUnavailable, "/healthz": http.StatusOK} {
		if code, body := srv.Get(t, path); code != want {
			t.Errorf("%s: %d %q, want %d", path, code, body, want)
		}
	}
	m := srv.Scrape(t)
	for _, r := range []string{"nodes", "pods", "daemonsets"} {
		if v, ok := m.Value("gpuops_informer_synced", map[string]string{"resource": r}); !ok || v != 0 {
			t.Errorf("gpuops_informer_synced{resource=%q} = %v (present %v), want 0", r, v, ok)
		}
	}
	if _, ok := m.Value("gpuops_nodes", nil); ok {
		t.Error("gpuops_nodes exported before any verdict")
	}
	if code := srv.Stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("serve: exit %d after SIGTERM, want 0", code)
	}
}

// TestWatchUnreachable: watch, like the one-shot judges, fails in one line
// when the server refuses or does not answer within --request-timeout.
func TestWatchUnreachable(t *testing.T) {
	bin := gpuopstest.Binary(t) // built before the clock starts
	for _, tc := range []struct{ name, kubeconfig, want string }{
		{"refused", testcluster.TokenKubeconfig(t, "https://127.0.0.1:1", "t"), "connection refused"},
		{"silent", blackhole(t), "(Client.Timeout|context deadline) exceeded"},
	} {
		began := time.Now()
		r := gpuopstest.Run(t, nil, bin, "watch", "--kubeconfig", tc.kubeconfig, "--request-timeout", "2s")
		lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
		if r.Code != 2 || r.Stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !regexp.MustCompile(tc.want).MatchString(lines[0]) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line error: …%s…", tc.name, r.Code, r.Stdout, r.Stderr, tc.want)
		}
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("%s: took %s", tc.name, took)
		}
	}
}

// TestAPIServerStoppedAndResumed: serve and watch go on across a paused
// API server, without a restart, and see the next change.
func TestAPIServerStoppedAndResumed(t *testing.T) {
	f := newFleet(t)
	a := f.gpuNode(t, "a")
	srv := serve(t, f.args...)
	w := gpuopstest.Cluster{}.Start(t, append([]string{"watch", "-o", "wide"}, f.args...)...)
	healthy := func(m gpuopstest.Scrape) bool {
		v, _ := m.Value("gpuops_nodes", map[string]string{"state": "ok"})
		return v == 1
	}
	srv.WaitFor(t, "a healthy node", healthy)
	w.Stdout.Expect(t, `\S+ `+a+` OK`)

	apiserver := testcluster.OwnAPIServer(t, f.env)
	apiserver.Stop(t)
	// The pause is the fault, its length what serve must ride out: on open
	// watches it sends nothing meanwhile, so no signal marks that it has been
	// felt. 5 s stays short of the controllers' 10 s leader-election
	// deadline (testcluster.APIServer).
	time.Sleep(5 * time.Second)
	// Meanwhile the last verdict is still served.
	if code, _ := srv.Get(t, "/readyz"); code != http.StatusOK || !healthy(srv.Scrape(t)) {
		t.Errorf("while the API server is stopped: /readyz %d, metrics without the last verdict", code)
	}
	apiserver.Resume(t)

	f.env.LabelNode(t, a, toolkit.LabelKey(), "false")
	w.Stdout.Expect(t, `\S+ `+a+` `+operand.DeviceRule.Finding)
	srv.WaitFor(t, "the violation after the pause", func(m gpuopstest.Scrape) bool {
		return m.IsOne("gpuops_order_violation", map[string]string{"node": a, "rule": operand.DeviceRule.Finding})
	})
	for _, p := range []*gpuopstest.Process{w, srv.Process} {
		if code := p.Stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, p.Stderr.All())
		}
	}
}
