package clusters_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
)

// kubeconfig writes a kubeconfig with a context per server, named
// c0, c1, …, and returns connection flags that read it.
func kubeconfig(t *testing.T, servers ...string) *kube.Flags {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nusers:\n- {name: u, user: {token: x}}\nclusters:\n")
	for i, s := range servers {
		fmt.Fprintf(&b, "- {name: c%d, cluster: {server: %q}}\n", i, s)
	}
	b.WriteString("contexts:\n")
	for i := range servers {
		fmt.Fprintf(&b, "- {name: c%d, context: {cluster: c%d, user: u}}\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f := kube.NewFlags()
	*f.KubeConfig = path
	return f
}

func TestResolve(t *testing.T) {
	servers := []string{"https://127.0.0.1:1", "https://127.0.0.1:2", "https://127.0.0.1:3"}
	f := kubeconfig(t, servers...)
	names := func(ts []clusters.Target) string {
		var n []string
		for _, t := range ts {
			n = append(n, t.Context+"="+t.Server)
		}
		return strings.Join(n, " ")
	}
	for _, c := range []struct {
		sel  clusters.Selection
		want string
	}{
		{clusters.Selection{All: true, Parallel: 1}, "c0=https://127.0.0.1:1 c1=https://127.0.0.1:2 c2=https://127.0.0.1:3"},
		{clusters.Selection{Names: []string{"c2", "c0", "c2"}, Parallel: 4}, "c2=https://127.0.0.1:3 c0=https://127.0.0.1:1"},
		{clusters.Selection{Match: "[12]$", Parallel: 4}, "c1=https://127.0.0.1:2 c2=https://127.0.0.1:3"},
		{clusters.Selection{Names: []string{"c2", "c0"}, Match: "0", Parallel: 4}, "c0=https://127.0.0.1:1"},
	} {
		ts, err := clusters.Resolve(f, c.sel)
		if err != nil || names(ts) != c.want {
			t.Errorf("Resolve(%+v) = %s, %v; want %s", c.sel, names(ts), err, c.want)
		}
		for _, tg := range ts {
			if *tg.Flags.Context != tg.Context || *tg.Flags.KubeConfig != *f.KubeConfig {
				t.Errorf("%s: flags for context %q of %q", tg.Context, *tg.Flags.Context, *tg.Flags.KubeConfig)
			}
		}
	}
	other := kubeconfig(t, servers...)
	*other.Context = "c1"
	for _, c := range []struct {
		f    *kube.Flags
		sel  clusters.Selection
		want string
	}{
		{f, clusters.Selection{Parallel: 2}, "--parallel needs --contexts, --all-contexts or --context-match"},
		{f, clusters.Selection{All: true}, "--parallel: want at least 1, got 0"},
		{f, clusters.Selection{All: true, Names: []string{"c0"}, Parallel: 1}, "--contexts and --all-contexts: give one of them"},
		{other, clusters.Selection{All: true, Parallel: 1}, "--context names one cluster: it does not go with --contexts, --all-contexts or --context-match"},
		{f, clusters.Selection{Names: []string{"c0", "nope"}, Parallel: 1}, `--contexts: context "nope" does not exist in the kubeconfig (it has c0, c1, c2)`},
		{f, clusters.Selection{Names: []string{"c0", ""}, Parallel: 1}, "--contexts: an empty context name"},
		{f, clusters.Selection{Match: "(", Parallel: 1}, "--context-match: error parsing regexp: missing closing ): `(`"},
		{f, clusters.Selection{Match: "x", Parallel: 1}, `--context-match: no context matches "x" (the kubeconfig has c0, c1, c2)`},
	} {
		if _, err := clusters.Resolve(c.f, c.sel); err == nil || err.Error() != c.want {
			t.Errorf("Resolve(%+v): %v, want %s", c.sel, err, c.want)
		}
	}
}

// Judge keeps to --parallel, and a cluster that refuses every read is its
// own error: it stops no other and no other is counted as judged for it.
// The servers answer each request as an API server that forbids everything
// would, after a pause long enough for the runs to overlap.
func TestJudgeAtMostParallel(t *testing.T) {
	var mu sync.Mutex
	busy, most := 0, 0 // servers with a request in flight
	var calls atomic.Int32
	var servers []string
	for range 6 {
		var active int
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			mu.Lock()
			if active++; active == 1 {
				busy++
				most = max(most, busy)
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			if active--; active == 0 {
				busy--
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden: nobody may"}`)
		}))
		t.Cleanup(s.Close)
		servers = append(servers, s.URL)
	}
	f := kubeconfig(t, servers...)
	ts, err := clusters.Resolve(f, clusters.Selection{All: true, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	run := &clusters.Run{Targets: ts, Parallel: 2}
	cs := run.Judge(context.Background(), &progress, pipeline.Options{Namespace: "gpu-operator"})
	if most != 2 {
		t.Errorf("at most %d clusters were read at once, want 2 (--parallel)", most)
	}
	for i, c := range cs {
		if c.Context != fmt.Sprintf("c%d", i) || c.Server != servers[i] || c.Result != nil || c.Err == nil || !strings.Contains(c.Err.Error(), "forbidden") {
			t.Errorf("cluster %d: %+v, want c%d in order, forbidden", i, c, i)
		}
	}
	if calls.Load() < 6 {
		t.Errorf("%d requests for 6 clusters", calls.Load())
	}
	if n := strings.Count(progress.String(), "\n"); n != 6 || !strings.Contains(progress.String(), "contexts: 6/6 judged (c") {
		t.Errorf("progress:\n%s\nwant a line per cluster", progress.String())
	}
	found, err := clusters.AnyFailed(cs, func(*outcome.Result) bool { return true })
	if found || err == nil || !strings.HasPrefix(err.Error(), "6 of 6 contexts could not be judged: c0: ") {
		t.Errorf("AnyFailed: %v, %v", found, err)
	}
}

// A cluster that accepts connections and never answers costs its own
// --request-timeout, not the run: it is an error, and the others are judged.
func TestJudgeHangingCluster(t *testing.T) {
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hang.Close() })
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // held open, never answered
		}
	}()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"forbidden: nobody may"}`)
	}))
	t.Cleanup(refuse.Close)
	f := kubeconfig(t, "http://"+hang.Addr().String(), refuse.URL)
	f.RequestTimeout = "1s"
	ts, err := clusters.Resolve(f, clusters.Selection{All: true, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cs := (&clusters.Run{Targets: ts, Parallel: 1}).Judge(context.Background(), io.Discard, pipeline.Options{Namespace: "gpu-operator"})
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the run took %s with --request-timeout 1s", took)
	}
	if cs[0].Err == nil || !strings.Contains(cs[0].Err.Error(), "Timeout") && !strings.Contains(cs[0].Err.Error(), "deadline") {
		t.Errorf("the hanging cluster: %v, want its timeout", cs[0].Err)
	}
	if cs[1].Err == nil || !strings.Contains(cs[1].Err.Error(), "forbidden") {
		t.Errorf("the other cluster after it: %v, want judged (forbidden)", cs[1].Err)
	}
}
