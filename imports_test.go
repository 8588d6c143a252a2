package gpuops_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The judging core judges plain values: the model, the catalog, the judges
// and DaemonSet admission must never link an API client, so that anything
// which judges (a script's differential test, the live watcher, a webhook)
// can use them without the network stack.
func TestJudgingCoreImportsNoClient(t *testing.T) {
	core := []string{
		"./pkg/snapshot", "./pkg/judge", "./pkg/explain", "./pkg/operand", "./pkg/daemonset",
		"./pkg/health", "./pkg/verdict", "./pkg/summary", "./pkg/discover", "./pkg/plan",
	}
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, core...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "k8s.io/client-go") {
			t.Errorf("the judging core (%s) depends on %s", strings.Join(core, " "), dep)
		}
	}
}

// The commands are wiring: a verdict is made in pkg/pipeline, never in
// cmd/gpuops, so that every command (watch and serve included) judges alike.
func TestCommandsImportNoJudge(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "./cmd/gpuops").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	judging := []string{"pkg/judge", "pkg/explain", "pkg/discover", "pkg/snapshot", "pkg/summary", "pkg/health"}
	for _, imp := range strings.Fields(string(out)) {
		for _, j := range judging {
			if strings.HasPrefix(imp, "github.com/gpuops/gpuops/"+j) {
				t.Errorf("cmd/gpuops imports %s: judging belongs to pkg/pipeline", imp)
			}
		}
	}
}
