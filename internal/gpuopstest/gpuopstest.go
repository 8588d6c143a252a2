// Package gpuopstest runs the gpuops binary and the standalone scripts the way
// a user does, for tests that compare them: a real process, real exit codes,
// stdout and stderr apart.
package gpuopstest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	gpuops "github.com/gpuops/gpuops"
)

// Result is what one run printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary builds ./cmd/gpuops once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpuopstest-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "gpuops")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/gpuops/gpuops/cmd/gpuops").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build ./cmd/gpuops: " + err.Error() + "\n" + string(out))
		}
	})
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
func Run(t testing.TB, env []string, name string, args ...string) Result {
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
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
}
