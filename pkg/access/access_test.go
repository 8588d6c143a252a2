package access_test

import (
	"testing"

	"github.com/gpuops/gpuops/pkg/access"
)

func TestForbiddenError(t *testing.T) {
	err := &access.ForbiddenError{Missing: []access.Need{
		{Verbs: []string{"patch"}, Resource: "nodes"},
		{Verbs: []string{"create", "patch"}, Group: "apps", Resource: "daemonsets", Namespace: "gpu-operator"},
	}}
	want := "forbidden: needs patch nodes; create,patch daemonsets.apps in namespace gpu-operator"
	if err.Error() != want {
		t.Errorf("%q, want %q", err.Error(), want)
	}
}
