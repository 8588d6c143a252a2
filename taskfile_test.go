package gpuops_test

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// The README's two commands run through Taskfile.yml: a YAML slip there (a
// ": " in an unquoted description) fails them before any test runs, while
// `go test ./...` alone stays green. So the file must parse and name them.
func TestTaskfileParses(t *testing.T) {
	b, err := os.ReadFile("Taskfile.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tasks map[string]struct {
			Desc string `json:"desc"`
		} `json:"tasks"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("Taskfile.yml: %v", err)
	}
	for _, name := range []string{"lab", "test", "tools", "cluster:up", "cluster:down"} {
		if f.Tasks[name].Desc == "" {
			t.Errorf("Taskfile.yml: task %s missing or without a description", name)
		}
	}
}
