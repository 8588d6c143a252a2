// Package gpuopstest runs the gpuops binary and the standalone scripts the way
// a user does, for tests that compare them: a real process, real exit codes,
// stdout and stderr apart.
package gpuopstest

import (
	"bytes"
	"errors"
	"fmt"
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

// EnvBinary names a gpuops binary, built from this tree, that Binary returns
// instead of building its own: hack/test.sh builds it once for every test
// package of a run (each build is a link of about 10 CPU-seconds).
const EnvBinary = "GPUOPS_TEST_BINARY"

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary returns the path of a gpuops binary: the one EnvBinary names, or
// else one it builds from ./cmd/gpuops once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv(EnvBinary); p != "" {
			binary = p
			if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
				buildErr = fmt.Errorf("%s=%s is not an executable (%v)", EnvBinary, p, err)
			}
			return
		}
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
