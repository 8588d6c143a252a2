package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	gpuops "github.com/gpuops/gpuops"
)

func TestWriteOutReplacesAtomically(t *testing.T) {
	w := New(t.TempDir())
	if err := w.WriteOut("a.txt", []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteOut("a.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(w.Root, "out", "a.txt"))
	if err != nil || string(got) != "new\n" {
		t.Fatalf("out/a.txt = %q, %v; want \"new\\n\"", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(w.Root, "out"))
	if len(entries) != 1 {
		t.Errorf("out/ holds %d entries, want only a.txt (no temporary file left)", len(entries))
	}
	if fi, _ := os.Stat(filepath.Join(w.Root, "out", "a.txt")); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
}

func TestFailedWriteLeavesNoTemporaryFile(t *testing.T) {
	w := New(t.TempDir())
	// a non-empty folder where the file should go: the final rename fails
	if err := os.MkdirAll(filepath.Join(w.Root, "out", "a.txt", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteOut("a.txt", []byte("new")); err == nil {
		t.Fatal("WriteOut onto a folder: no error")
	}
	entries, _ := os.ReadDir(filepath.Join(w.Root, "out"))
	if len(entries) != 1 {
		t.Errorf("out/ holds %d entries after a failed write, want 1 (the temporary file removed)", len(entries))
	}
}

func TestInstallScripts(t *testing.T) {
	w := New(t.TempDir())
	mine := filepath.Join(w.Root, "order-check.sh")
	if err := os.WriteFile(mine, []byte("#!/bin/sh\necho mine\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := w.InstallScripts(gpuops.Scripts); err != nil {
		t.Fatal(err)
	}
	want, _ := gpuops.Scripts.ReadFile("operand-audit.sh")
	got, err := os.ReadFile(filepath.Join(w.Root, "operand-audit.sh"))
	if err != nil || string(got) != string(want) {
		t.Errorf("operand-audit.sh not installed as embedded: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(w.Root, "operand-audit.sh")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("operand-audit.sh mode %v, want 0755", fi.Mode().Perm())
	}
	if got, _ := os.ReadFile(mine); string(got) != "#!/bin/sh\necho mine\n" {
		t.Errorf("an existing order-check.sh was overwritten: %q", got)
	}
}

func TestInstallScriptsSkipsFolders(t *testing.T) {
	w := New(t.TempDir())
	scripts := fstest.MapFS{"a.sh": {Data: []byte("a")}, "sub/b.sh": {Data: []byte("b")}}
	if err := w.InstallScripts(scripts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Root, "sub")); err == nil {
		t.Error("a folder of the script set was installed")
	}
}
