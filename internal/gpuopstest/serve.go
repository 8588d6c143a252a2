package gpuopstest

import (
	"bufio"
	"regexp"
	"testing"
)

var serving = regexp.MustCompile(`serving (http://\S+)/metrics`)

// StartServe runs gpuops against c with args, a serve command line (with
// --listen 127.0.0.1:0, a port of its own), until the test ends, and
// returns the base URL it says it serves on. Its stderr is read to the end,
// so serve never blocks on it.
func StartServe(t testing.TB, c Cluster, args ...string) string {
	t.Helper()
	cmd := c.Command(t, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var url string
	for url == "" && sc.Scan() {
		if m := serving.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if url == "" {
		t.Fatal("serve did not say where it serves")
	}
	return url
}
