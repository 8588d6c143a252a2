package testcluster

import (
	"net/http"
	"slices"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Recorder keeps the requests a client made: what a test asserts of how
// gpuops reads (which LISTs, which watches, narrowed how).
type Recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	next http.RoundTripper
}

// RoundTrip keeps req and sends it on.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// Requests are the requests made so far, in the order made.
func (r *Recorder) Requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// RecordedClient is a client of the test's cluster whose requests the
// Recorder keeps.
func (e *Env) RecordedClient(t testing.TB) (kubernetes.Interface, *Recorder) {
	t.Helper()
	rec := &Recorder{}
	cfg := rest.CopyConfig(e.RESTConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, rec
}
