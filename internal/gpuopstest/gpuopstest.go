// Package gpuopstest runs the gpuops binary and the standalone scripts the way
// a user does, for tests that compare them: a real process, real exit codes,
// stdout and stderr apart.
package gpuopstest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	gpuops "github.com/gpuops/gpuops"
)

// Output is what one run printed and how it exited.
type Output struct {
	Stdout, Stderr string
	Code           int
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the path of a gpuops binary built from this checkout's
// ./cmd/gpuops. It is built once per test process into the user's cache, a
// folder per checkout, under a lock: go build relinks only when the source
// changed (a binary of the same build ID is left as it is), so the packages
// of a run, and the runs after it, share one instead of each linking its
// own, about 10 CPU-seconds apiece (the temporary folder of each, never
// removed, also piled up in /tmp). A rebuild, when the source changed, goes
// as go build installs: a process running the old binary keeps it.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { binary, buildErr = build() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// InstallScripts writes the embedded scripts, executable, into dir.
func InstallScripts(t testing.TB, dir string) {
	t.Helper()
	for _, name := range []string{"operand-audit.sh", "order-check.sh"} {
		b, err := fs.ReadFile(gpuops.Scripts, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// Run runs a program with extra environment variables (KEY=VALUE) on top of
// the test's. A run that could not start or was killed fails the test.
func Run(t testing.TB, env []string, name string, args ...string) Output {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() < 0) {
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr.String())
	}
	return Output{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
}

// WriteFile writes content to path, making its folder, and returns path.
func WriteFile(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ReadDir returns the files of dir, by name, and their contents (a
// workspace's out/, say).
func ReadDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

func build() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(bytes.TrimSpace(gomod))
	dir := filepath.Join(cache, "gpuops-test", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	bin := filepath.Join(dir, "gpuops")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/gpuops/gpuops/cmd/gpuops").CombinedOutput()
	if err != nil {
		return "", errors.New("go build ./cmd/gpuops: " + err.Error() + "\n" + string(out))
	}
	return bin, nil
}

// ValidJUnit checks a JUnit document with xmllint against the schema of
// pkg/report/testdata; root is the repository's root.
func ValidJUnit(t testing.TB, root, doc string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint is needed to check JUnit output against its schema: apt-get install -y libxml2-utils (or go tool task deps)")
	}
	file := WriteFile(t, filepath.Join(t.TempDir(), "junit.xml"), doc)
	if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join(root, "pkg", "report", "testdata", "junit.xsd"), file).CombinedOutput(); err != nil {
		t.Fatalf("JUnit output breaks the schema: %v\n%s", err, out)
	}
}
