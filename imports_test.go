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
