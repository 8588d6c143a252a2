package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
)

func runApp(args ...string) result {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"gpuops"}, args...), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// --version and version --client contact no server (none is configured here).
func TestVersionClientOnly(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	for _, args := range [][]string{{"--version"}, {"version", "--client"}} {
		r := runApp(args...)
		want := "gpuops Version: devel\nGo Version: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
			"Lab Operands: " + operand.Names(operand.Lab) + "\nKnown Operands: " + operand.Names(operand.Real) + "\n"
		if r.code != 0 || r.stdout != want || r.stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0, stdout %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
	r := runApp("version", "--client", "-o", "json")
	var v report.VersionInfo
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("version -o json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if v.ClientVersion.GoVersion != runtime.Version() || len(v.Catalog.Lab) != len(operand.Lab) ||
		v.Catalog.Known[len(v.Catalog.Known)-1].DaemonSet != operand.Real[len(operand.Real)-1].DaemonSet || v.ServerVersion != nil {
		t.Errorf("version -o json: %+v", v)
	}
	if r := runApp("version", "--client", "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "  gitVersion: devel\n") {
		t.Errorf("version -o yaml: exit %d\n%s", r.code, r.stdout)
	}
}

// Without a cluster, version prints the client's part and fails on the server's.
func TestVersionWithoutServer(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	r := runApp("version")
	if r.code != 2 || !strings.HasPrefix(r.stdout, "gpuops Version: ") || strings.Contains(r.stdout, "Server") ||
		!strings.HasPrefix(r.stderr, "error: server version: kubeconfig: no cluster configured") {
		t.Errorf("version without a cluster: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runApp("version", "-o", "table"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, `unknown output format "table"`) {
		t.Errorf("version -o table: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
