package gpuops_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// pure are the packages that hold, judge or format plain values: the model,
// the catalog, the judges and DaemonSet admission, their outcome, the guard's
// policy, and what turns verdicts into reports and lines. None may link an
// API client, so that anything which judges or prints a verdict (a script's
// differential test, the live watcher, a webhook) can use them without the
// network stack; a package that needs a client is not on this list.
var pure = []string{
	"snapshot", "judge", "explain", "operand", "daemonset", "health", "upgrade", "verdict", "summary",
	"discover", "plan", "outcome", "openreports", "guard", "labspec", "render", "report", "words", "rehearsal/configs", "ledger", "quarantine", "signature", "workload",
}

// TestPurePackagesLinkNoClient fails for each pure package that links
// client-go, directly or through any package it imports.
func TestPurePackagesLinkNoClient(t *testing.T) {
	args := []string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}
	for _, p := range pure {
		args = append(args, "./pkg/"+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(pure) {
		t.Fatalf("go list listed %d packages, want the %d pure ones:\n%s", len(lines), len(pure), out)
	}
	for _, line := range lines {
		pkg, deps, _ := strings.Cut(line, " ")
		var client []string
		for _, dep := range strings.Fields(deps) {
			if strings.HasPrefix(dep, "k8s.io/client-go/") || dep == "k8s.io/client-go" {
				client = append(client, dep)
			}
		}
		if len(client) > 0 {
			t.Errorf("%s must not link an API client; it links %d client-go packages (%s, …)", pkg, len(client), client[0])
		}
	}
}

// judges are the packages that make a verdict.
var judges = []string{"pkg/judge", "pkg/explain", "pkg/discover", "pkg/summary", "pkg/health"}

// The commands are wiring: a verdict is made in pkg/pipeline, never in
// cmd/gpuops, so that every command (watch and serve included) judges alike.
func TestCommandsImportNoJudge(t *testing.T) {
	importsNone(t, "./cmd/gpuops", slices.Concat(judges, []string{"pkg/snapshot"}), "judging belongs to pkg/pipeline")
}

// The reader only fills the model: the judges stand above it and read what
// it fills (pkg/workload imports pkg/snapshot, never the other way).
func TestReaderImportsNoJudge(t *testing.T) {
	importsNone(t, "./pkg/snapshot/read", slices.Concat(judges, []string{"pkg/workload"}), "the reader fills the model, the judges read it")
}

// importsNone fails for each package of the repo under one of banned
// (paths from the module root) that pkg imports directly.
func importsNone(t *testing.T, pkg string, banned []string, why string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(imp, "github.com/gpuops/gpuops/"+b) {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
	}
}

// The informer factory of client-go (k8s.io/client-go/informers), used to
// make an informer, links the informers and listers of every API group:
// 12 MB of binary, which the kernel maps into serve's resident memory whole.
// gpuops watches a handful of kinds and makes their informers one by one.
func TestNoPackageUsesTheInformerFactory(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if imp == "k8s.io/client-go/informers" {
				t.Errorf("%s imports %s; make the informers of the kinds watched (k8s.io/client-go/informers/<group>/<version>)", pkg, imp)
			}
		}
	}
}

// Each package says what it holds in a package doc comment (a test-only
// package holds no code to say).
func TestEveryPackageHasADoc(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{len .GoFiles}} {{if .Doc}}doc{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] != "0" {
			t.Errorf("%s has no package doc comment", f[0])
		}
	}
}
