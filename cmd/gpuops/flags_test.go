package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/urfave/cli/v2"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/kube"
)

func TestIntersperse(t *testing.T) {
	app := newApp("gpuops", io.Discard, io.Discard)
	cases := []struct{ in, want []string }{
		{[]string{"gpuops", "order-check", "n1", "-o", "json"}, []string{"gpuops", "order-check", "-o", "json", "n1"}},
		{[]string{"gpuops", "order-check", "n1", "--all-rules", "-o=json"}, []string{"gpuops", "order-check", "--all-rules", "-o=json", "n1"}},
		{[]string{"gpuops", "-n", "x", "optout", "n1", "driver", "--timeout", "5s"}, []string{"gpuops", "-n", "x", "optout", "--timeout", "5s", "n1", "driver"}},
		// "audit" here is the value of --context, not the command.
		{[]string{"gpuops", "--context", "audit", "matrix"}, []string{"gpuops", "--context", "audit", "matrix"}},
		// a bool connection flag takes no value: "audit" is the command
		{[]string{"gpuops", "--insecure-skip-tls-verify", "order-check", "n1", "--as", "x"}, []string{"gpuops", "--insecure-skip-tls-verify", "order-check", "--as", "x", "n1"}},
		{[]string{"gpuops", "order-check", "n1", "--insecure-skip-tls-verify", "-s", "https://h"}, []string{"gpuops", "order-check", "--insecure-skip-tls-verify", "-s", "https://h", "n1"}},
		{[]string{"gpuops", "order-check", "--", "-n1"}, []string{"gpuops", "order-check", "--", "-n1"}},
		{[]string{"gpuops", "no-such-command", "x", "-o", "json"}, []string{"gpuops", "no-such-command", "x", "-o", "json"}},
		{[]string{"gpuops", "--help"}, []string{"gpuops", "--help"}},
		// a subcommand's flags are its own, behind its name
		{[]string{"gpuops", "guard", "install", "--mode", "warn", "-n", "x"}, []string{"gpuops", "guard", "install", "--mode", "warn", "-n", "x"}},
		{[]string{"gpuops", "optout", "-l", "a=b", "dcgm-exporter", "--max-unavailable", "2"}, []string{"gpuops", "optout", "-l", "a=b", "--max-unavailable", "2", "dcgm-exporter"}},
	}
	for _, c := range cases {
		if got := intersperse(app, c.in); !slices.Equal(got, c.want) {
			t.Errorf("intersperse(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// probe runs the app with a command that only returns the connection flags
// the arguments set.
func probe(t *testing.T, args ...string) *kube.Flags {
	t.Helper()
	var cf *kube.Flags
	app := newApp("gpuops", io.Discard, io.Discard)
	app.Commands = append(app.Commands, &cli.Command{
		Name:         "probe",
		OnUsageError: app.OnUsageError,
		Flags:        connectionFlags(app.Metadata[kubectlFlagsKey].(*pflag.FlagSet), false),
		Action: func(c *cli.Context) error {
			cf = configFlags(c)
			return nil
		},
	})
	if err := app.Run(intersperse(app, append([]string{"gpuops"}, args...))); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if cf == nil {
		t.Fatalf("%q: the command did not run", args)
	}
	return cf
}

// Every flag of kubectl's ConfigFlags is a gpuops flag, before and after the
// command.
func TestEveryKubectlConnectionFlag(t *testing.T) {
	fs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(false).AddFlags(fs)
	app := newApp("gpuops", io.Discard, io.Discard)
	fs.VisitAll(func(f *pflag.Flag) {
		names := []string{f.Name}
		if f.Shorthand != "" {
			names = append(names, f.Shorthand)
		}
		for _, flags := range [][]cli.Flag{app.Flags, app.Command("audit").Flags, app.Command("up").Flags} {
			if !slices.ContainsFunc(flags, func(g cli.Flag) bool { return slices.Equal(g.Names(), names) }) {
				t.Errorf("kubectl flag %q (names %q) missing", f.Name, names)
			}
		}
	})
}

// The flags mean what they mean to kubectl: they reach client-go's REST
// config, wherever they are written; the last one given wins, and
// --as-group adds up.
func TestConnectionFlagsReachTheRESTConfig(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	writeTestFile(t, empty, "apiVersion: v1\nkind: Config\n")
	for _, args := range [][]string{
		{"--kubeconfig", empty, "-s", "https://first:6443", "--as", "jane", "--as-group", "a", "--token", "T",
			"--tls-server-name", "api.example", "--insecure-skip-tls-verify", "--request-timeout", "7s",
			"probe", "--as-group", "b", "--server", "https://second:6443", "--as-uid", "42"},
		{"probe", "--kubeconfig", empty, "--server=https://second:6443", "--as=jane", "--as-group=a", "--as-group=b",
			"--token=T", "--tls-server-name=api.example", "--insecure-skip-tls-verify=true", "--request-timeout=7s", "--as-uid=42"},
	} {
		cl, err := kube.Connect(probe(t, args...))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		cfg := cl.Config
		want := rest.ImpersonationConfig{UserName: "jane", UID: "42", Groups: []string{"a", "b"}}
		if cfg.Host != "https://second:6443" || cfg.BearerToken != "T" || cfg.ServerName != "api.example" || !cfg.Insecure ||
			cfg.Timeout != 7*time.Second || cfg.Impersonate.UserName != want.UserName || cfg.Impersonate.UID != want.UID ||
			!slices.Equal(cfg.Impersonate.Groups, want.Groups) {
			t.Errorf("%q: host %q token %q server name %q insecure %v timeout %v impersonate %+v",
				args, cfg.Host, cfg.BearerToken, cfg.ServerName, cfg.Insecure, cfg.Timeout, cfg.Impersonate)
		}
	}
	// gpuops' own default: a bound on each request
	cl, err := kube.Connect(probe(t, "--kubeconfig", empty, "-s", "https://h", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	if cl.Config.Timeout != 30*time.Second {
		t.Errorf("default request timeout %v, want 30s", cl.Config.Timeout)
	}
}

func TestNamespacePrecedence(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "lab.yaml")
	writeTestFile(t, spec, "namespace: from-spec\nnodes:\n- name: a\n")
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
		app := newApp("gpuops", io.Discard, io.Discard)
		var got string
		cmd := app.Command(tc.args[slices.IndexFunc(tc.args, func(a string) bool { return app.Command(a) != nil })])
		cmd.Action = func(c *cli.Context) error {
			if cmd.Name == "up" {
				lab, err := loadLab(c)
				if err != nil {
					return err
				}
				got = lab.Namespace
				return nil
			}
			var err error
			got, err = namespace(c)
			return err
		}
		if err := app.Run(intersperse(app, append([]string{"gpuops"}, tc.args...))); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("%q: namespace %q, want %q", tc.args, got, tc.want)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
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
	} {
		var stdout, stderr bytes.Buffer
		full := append([]string{"gpuops", "--kubeconfig", "/nonexistent/kubeconfig"}, args...)
		code := run(context.Background(), full, &stdout, &stderr)
		if code != exitError || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), "error: --") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming the flag", args, code, stdout.String(), stderr.String())
		}
	}
}
