package read_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// A failure every list meets (a bad token) is said as the node list met it,
// though another list failed first: the user reads "list nodes: …", not an
// error about a ClusterPolicy they never asked for, nor a cancellation.
func TestErrorInListOrder(t *testing.T) {
	// The node list is answered only once the client has read the failure
	// of the DaemonSet list (after which the ClusterPolicy is not asked
	// for: the two are read one after the other), so that fails first.
	others := map[string]bool{"/apis/apps/v1/namespaces/ns/daemonsets": true}
	var mu sync.Mutex
	seen := map[string]bool{}
	othersFailed := make(chan struct{})
	markRead := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[path] {
			seen[path] = true
			if len(seen) == len(others) {
				close(othersFailed)
			}
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/nodes") {
			select {
			case <-othersFailed:
			case <-r.Context().Done():
				t.Errorf("the node list was pending, but the client did not read the failures of %v meanwhile", others)
				return
			}
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && others[req.URL.Path] {
				resp.Body = &onClose{ReadCloser: resp.Body, f: func() { markRead(req.URL.Path) }}
			}
			return resp, err
		})
	}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = read.Snapshot(ctx, c, "ns", read.Options{DaemonSets: true, Operator: true})
	if err == nil || !strings.HasPrefix(err.Error(), "list nodes: ") || !apierrors.IsUnauthorized(err) {
		t.Errorf("error %v, want the node list's own 401", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// onClose calls f once the client has closed the body: it has read the
// response.
type onClose struct {
	io.ReadCloser
	f func()
}

func (b *onClose) Close() error {
	err := b.ReadCloser.Close()
	b.f()
	return err
}
