package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fleet views and -o junit refuse bad input before reading anything:
// exit 2, one error line, nothing on stdout, no file written. No cluster is
// needed: a command that went on would fail on the missing kubeconfig,
// with another message.
func TestFleetViewsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	page := filepath.Join(dir, "fleet.html")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"summary", "-o", "junit"}, `unknown output format "junit" (want text, json, yaml, table, name)`},
		{[]string{"matrix", "-o", "junit"}, `unknown output format "junit"`},
		{[]string{"audit", "-o", "html"}, `(want text, json, yaml, table, wide, name, junit, openreports)`},
		{[]string{"order-check", "n", "-o", "html"}, `(want text, json, yaml, table, wide, name, junit, openreports)`},
		{[]string{"matrix", "-o", "name"}, `unknown output format "name" (want text, json, yaml, table)`},
		{[]string{"matrix", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"summary", "-o", "wide"}, `unknown output format "wide" (want text, json, yaml, table, name)`},
		{[]string{"summary", "--no-headers"}, "flag provided but not defined: -no-headers"},
		{[]string{"summary", "--group-by", "not a label"}, "--group-by: invalid label key"},
		{[]string{"summary", "extra"}, "extra"},
		{[]string{"summary", "-l", "a in ("}, "selector"},
		{[]string{"report"}, "--html FILE is required"},
		{[]string{"report", "--html", page, "extra"}, "extra"},
		{[]string{"report", "--html", page, "--group-by", "-bad"}, "--group-by"},
		{[]string{"report", "--html", page, "-o", "json"}, "flag provided but not defined: -o"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"gpuops", "--kubeconfig", kubeconfig}, tc.args...), &stdout, &stderr)
			r := result{code, stdout.String(), stderr.String()}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			wantError(t, r, tc.want)
			if _, err := os.Stat(page); err == nil {
				t.Errorf("%s written", page)
			}
		})
	}
}
