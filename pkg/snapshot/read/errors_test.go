package read_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// A failure every list meets (a bad token) is said as the node list met it,
// though another list failed first: the user reads "list nodes: …", not an
// error about a ClusterPolicy they never asked for, nor a cancellation.
func TestErrorInListOrder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/nodes") {
			time.Sleep(300 * time.Millisecond) // the other lists fail first
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = read.Snapshot(context.Background(), c, "ns", read.Options{DaemonSets: true, Operator: true})
	if err == nil || !strings.HasPrefix(err.Error(), "list nodes: ") || strings.Contains(err.Error(), "clusterpolicies") {
		t.Errorf("error %v, want the node list's own", err)
	}
}
