package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/report"
)

// The namespace is -n wherever it is written, else the --lab spec's, else
// gpu-operator, for the judges and the provisioning commands alike.
func TestNamespacePrecedence(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "lab.yaml")
	gpuopstest.WriteFile(t, spec, "namespace: from-spec\nnodes:\n- name: a\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix"}, "gpu-operator"},
		{[]string{"matrix", "--lab", spec}, "from-spec"},
		{[]string{"-n", "from-flag", "matrix", "--lab", spec}, "from-flag"},
		{[]string{"matrix", "--lab", spec, "-n", "from-flag"}, "from-flag"},
		{[]string{"up"}, "gpu-operator"},
		{[]string{"up", "--lab", spec}, "from-spec"},
		{[]string{"up", "--lab", spec, "--namespace", "from-flag"}, "from-flag"},
	} {
		e := cliopts.Env{Out: io.Discard, ErrOut: io.Discard, Kube: kube.NewFlags()}
		judge, up := newJudge(e, cliopts.JudgeOutput(), report.MatrixView, nil), &upOptions{newProvisioning(e)}
		app := &cli.App{Name: "gpuops", Writer: io.Discard, ErrWriter: io.Discard, Commands: []*cli.Command{
			{Name: "matrix", Flags: []cli.Flag{judge.Lab.JudgeFlag()}, Action: func(c *cli.Context) error { return judge.Complete(c) }},
			{Name: "up", Flags: []cli.Flag{up.Lab.SpecFlag()}, Action: func(c *cli.Context) error { return up.Complete(c) }},
		}}
		plugin.Adopt(app, connectionFlags(e.Kube))
		if err := app.Run(kubectlcli.Intersperse(app, append([]string{"gpuops"}, tc.args...))); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		got := judge.Lab.Namespace
		if slices.Contains(tc.args, "up") {
			lab, err := up.Lab.Spec(gpuops.DefaultLab)
			if err != nil {
				t.Fatal(err)
			}
			got = lab.Namespace
		}
		if got != tc.want {
			t.Errorf("%q: namespace %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A meaningless duration is bad input, refused before anything is read or
// changed: no kubeconfig is even loaded (the one given does not exist).
func TestBadDurationsAreBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"up", "--timeout", "-1s"},
		{"up", "--timeout=0s"},
		{"optout", "--timeout", "-5s", "node-a", "device-plugin"},
		{"optin", "--timeout", "-5s", "node-a", "device-plugin"},
		{"reset", "--timeout", "-1m"},
		{"lab", "--timeout", "-1m"},
		{"guard", "install", "--timeout", "-1s"},
		{"audit", "--stuck-after", "-1m"},
		{"summary", "--stuck-after=-1s"},
		{"watch", "--stuck-after", "-1h"},
		{"serve", "--stuck-after", "-1h"},
		{"why", "trainer-0", "--stuck-after", "-1s"},
		{"pods", "--stuck-after", "-1s"},
		{"capacity", "--stuck-after", "-1s"},
	} {
		var stdout, stderr bytes.Buffer
		full := append([]string{"gpuops", "--kubeconfig", "/nonexistent/kubeconfig"}, args...)
		code := run(context.Background(), full, &stdout, &stderr)
		if code != exitError || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), "error: --") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the flag", args, code, stdout.String(), stderr.String())
		}
	}
}

// Every bad value of serve's --quarantine flags and every bad use of the
// quarantine command (and of guard, the other command of subcommands) is
// bad input: exit 2, one line naming what is wrong, before anything is read
// or changed (the kubeconfig given does not exist). A node that does not
// exist needs a cluster: test/quarantine's TestBadInput.
func TestBadQuarantineInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--quarantine=maybe"}, `unknown --quarantine "maybe" (want off, dry-run or on)`},
		{[]string{"serve", "--quarantine", ""}, `unknown --quarantine ""`},
		{[]string{"serve", "--quarantine=on", "--quarantine-after", "0s"}, "--quarantine-after 0s: want a positive duration"},
		{[]string{"serve", "--quarantine-after=-2m"}, "--quarantine-after -2m0s: want a positive duration"},
		{[]string{"serve", "--quarantine-after=2"}, `invalid value "2" for flag -quarantine-after`},
		{[]string{"serve", "--release-after", "0s"}, "--release-after 0s: want a positive duration"},
		{[]string{"serve", "--release-after=-1s"}, "--release-after -1s: want a positive duration"},
		{[]string{"serve", "--quarantine-max=-1"}, "--quarantine-max -1: want 1 or more"},
		{[]string{"serve", "--quarantine-max=0"}, "--quarantine-max 0: want 1 or more"},
		{[]string{"serve", "--quarantine-max=10%"}, `invalid value "10%" for flag -quarantine-max`},
		{[]string{"serve", "--quarantine-rate=-1"}, "--quarantine-rate -1: want 1 or more"},
		{[]string{"serve", "--quarantine-rate", "0"}, "--quarantine-rate 0: want 1 or more"},
		{[]string{"quarantine", "release"}, "want exactly one NODE, got 0 arguments"},
		{[]string{"quarantine", "release", "node-a", "node-b"}, "want exactly one NODE, got 2 arguments"},
		{[]string{"quarantine", "release", "Node_A"}, `invalid node name "Node_A"`},
		{[]string{"quarantine", "status", "node-a"}, "unexpected arguments"},
		{[]string{"quarantine", "status", "-o", "table"}, `unknown output format "table" (want text, json, yaml)`},
		{[]string{"quarantine", "reset", "node-a"}, "unexpected arguments"},
		{[]string{"quarantine", "resett"}, `unknown command "resett" for "quarantine" (want status, release or reset)`},
		{[]string{"quarantine", "lift", "node-a", "-n", "x"}, `unknown command "lift" for "quarantine"`},
		{[]string{"guard", "instal"}, `unknown command "instal" for "guard" (want install, status or uninstall)`},
	} {
		var stdout, stderr bytes.Buffer
		full := append([]string{"gpuops", "--kubeconfig", "/nonexistent/kubeconfig"}, tc.args...)
		code := run(context.Background(), full, &stdout, &stderr)
		if code != exitError || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), "error: ") ||
			!strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
	// Without a subcommand, the command of subcommands lists them.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"gpuops", "quarantine"}, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stdout.String(), "release") || stderr.Len() != 0 {
		t.Errorf("gpuops quarantine: exit %d, stdout %q, stderr %q; want its subcommands listed", code, stdout.String(), stderr.String())
	}
}

// --from judges a file with no kubeconfig read (the one given does not
// exist); what does not go with it, or a bad --now, is bad input: exit 2,
// one line, nothing on stdout.
func TestFromFlags(t *testing.T) {
	input := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "dump.yaml"), `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: gpu-1, labels: {nvidia.com/gpu.deploy.driver: "true"}}}
- apiVersion: apps/v1
  kind: DaemonSet
  metadata: {name: nvidia-driver-daemonset, namespace: gpu-operator}
  spec: {template: {spec: {nodeSelector: {nvidia.com/gpu.deploy.driver: "true"}}}}
- apiVersion: v1
  kind: Pod
  metadata:
    name: nvidia-driver-daemonset-abcde
    namespace: gpu-operator
    ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-driver-daemonset, uid: u, controller: true}]
  spec: {nodeName: gpu-1}
  status: {phase: Running}
`)
	judge := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"gpuops", "--kubeconfig", "/nonexistent/kubeconfig"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, stdout, stderr := judge("audit", "--from", input); code != exitOK || stdout != "gpu-1 OK\n" || !strings.Contains(stderr, "holds no clusterpolicies.nvidia.com") {
		t.Errorf("audit --from: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"health", "--from", input, "--logs"}, "--logs reads the containers' logs from the cluster"},
		{[]string{"audit", "--from", input, "--contexts", "a,b"}, "--from judges one input"},
		{[]string{"audit", "--now", "2026-12-07T12:00:00Z"}, "--now: only with --from"},
		{[]string{"why", "pod-1", "--from", input, "--now", "yesterday"}, `--now "yesterday": want an RFC 3339 time`},
		{[]string{"audit", "--from", "/nonexistent/bundle.yaml"}, "--from: stat /nonexistent/bundle.yaml"},
		{[]string{"collect", "-o", "bundle.txt"}, `--output "bundle.txt": want a name ending in .yaml, .yml or .json`},
		{[]string{"collect", "--chunk-size=-1"}, "--chunk-size -1: want 0 (each list whole) or a positive number"},
	} {
		code, stdout, stderr := judge(c.args...)
		if code != exitError || stdout != "" || !strings.HasPrefix(stderr, "error: "+c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line %q", c.args, code, stdout, stderr, c.want)
		}
	}
}
