package kube_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

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
