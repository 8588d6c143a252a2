package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestContinuousModeRefusesBadInput: watch and serve refuse bad input the
// way the one-shot judges do, in one line with exit 2, before they watch or
// serve anything.
func TestContinuousModeRefusesBadInput(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "-o", "csv"}, `unknown output format "csv" (want text, json, yaml, table, wide)`},
		{[]string{"watch", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"watch", "-l", "a in ("}, "--selector"},
		{[]string{"serve", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"serve", "-l", "a in ("}, "--selector"},
		{[]string{"serve", "--listen", "127.0.0.1:99999"}, "invalid port"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"gpuops", "--kubeconfig", kubeconfig}, tc.args...), &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != exitError || stdout.Len() > 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line error: …%s…", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}
