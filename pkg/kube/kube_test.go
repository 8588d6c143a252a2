package kube_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/kube"
)

// ForContext keeps every connection flag but --context: the kubeconfig,
// the auth and impersonation flags, the timeout, and any flag cli-runtime
// adds later (each exported field is set here by reflection).
func TestForContextKeepsEveryFlag(t *testing.T) {
	f := kube.NewFlags()
	v := reflect.ValueOf(f.ConfigFlags).Elem()
	for i := range v.NumField() {
		field := v.Field(i)
		if !v.Type().Field(i).IsExported() || field.Kind() != reflect.Pointer {
			continue
		}
		field.Set(reflect.New(field.Type().Elem()))
	}
	f.RequestTimeout = "7s"
	g := f.ForContext("other")
	w := reflect.ValueOf(g.ConfigFlags).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if !v.Type().Field(i).IsExported() || v.Field(i).Kind() != reflect.Pointer || name == "Context" {
			continue
		}
		if w.Field(i).Pointer() != v.Field(i).Pointer() {
			t.Errorf("ForContext dropped %s", name)
		}
	}
	if *g.Context != "other" || g.RequestTimeout != "7s" {
		t.Errorf("context %q, request timeout %q; want other and 7s", *g.Context, g.RequestTimeout)
	}
	if f.Context == g.Context {
		t.Error("ForContext changed the flags it was called on")
	}
}

func TestContexts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := `apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: x}}
contexts:
- {name: west, context: {cluster: c, user: u}}
- {name: east, context: {cluster: c, user: u}}
`
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	f := kube.NewFlags()
	*f.KubeConfig = path
	got, err := f.Contexts()
	if err != nil || !slices.Equal(got, []string{"east", "west"}) {
		t.Errorf("Contexts() = %q, %v; want east, west", got, err)
	}
	if _, server := f.ForContext("west").Target(); server != "https://127.0.0.1:1" {
		t.Errorf("west's server %q", server)
	}
}

// noKubeconfig are the default flags with an empty kubeconfig of the test's
// own: the flags merge the kubeconfig they name (else $KUBECONFIG, else
// ~/.kube/config) with --server as kubectl does, and a test must not take
// the current context of whatever machine it runs on.
func noKubeconfig(t *testing.T) *kube.Flags {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := kube.NewFlags()
	f.KubeConfig = &path
	return f
}

// The judges' reader speaks HTTP/1.1 to a server that offers HTTP/2, each
// of its LISTs on a connection of its own; the other clients keep HTTP/2.
func TestReadingSpeaksHTTP1(t *testing.T) {
	var mu sync.Mutex
	var protos []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","items":[]}`)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	f := noKubeconfig(t)
	server, insecure := srv.URL, true
	f.APIServer, f.Insecure = &server, &insecure
	cl, err := kube.Connect(f)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := kube.ConnectReading(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := reader.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"HTTP/1.1", "HTTP/2.0"}; !slices.Equal(protos, want) {
		t.Errorf("reader then Kube spoke %v, want %v", protos, want)
	}
}
