package kubectlcli_test

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
	"github.com/gpuops/gpuops/pkg/kubectlcli"
)

var plugin = kubectlcli.Plugin{Name: "gpuops", Completion: kubectlcli.Completion{
	Args: map[string]kubectlcli.Completer{"OPERAND": kubectlcli.Words("driver\tDaemonSet nvidia-driver-daemonset", "dcgm")},
	Flag: func(cmd *cli.Command, flag string) kubectlcli.Completer {
		switch flag {
		case "output":
			return kubectlcli.Words("text", cmd.Name)
		case "contexts":
			return kubectlcli.Contexts
		}
		return nil
	},
}}

// newApp is an app shaped like gpuops: value and bool flags, positional
// arguments and a subcommand, adopted with the connection flags of cf.
func newApp(cf *kube.Flags, stdout io.Writer, cmds ...*cli.Command) *cli.App {
	output := &cli.StringFlag{Name: "output", Aliases: []string{"o"}}
	app := &cli.App{
		Name:   "gpuops",
		Writer: stdout, ErrWriter: io.Discard,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "version"}},
		Commands: append([]*cli.Command{
			kubectlcli.Positional(&cli.Command{Name: "order-check", Flags: []cli.Flag{output, &cli.BoolFlag{Name: "all-rules"}}},
				kubectlcli.Form{Args: []kubectlcli.Arg{{Kind: "NODE"}}}),
			kubectlcli.Positional(&cli.Command{Name: "optout", Flags: []cli.Flag{
				&cli.DurationFlag{Name: "timeout"}, &cli.StringFlag{Name: "selector", Aliases: []string{"l"}}, &cli.IntFlag{Name: "max-unavailable"},
			}}, kubectlcli.Form{Args: []kubectlcli.Arg{{Kind: "NODE"}, {Kind: "OPERAND"}}},
				kubectlcli.Form{Flag: "l", Value: "SELECTOR", Args: []kubectlcli.Arg{{Kind: "OPERAND"}}}),
			kubectlcli.Positional(&cli.Command{Name: "health"}, kubectlcli.Form{Args: []kubectlcli.Arg{{Kind: "OPERAND", Many: true}}}),
			{Name: "audit", Flags: []cli.Flag{output, &cli.StringSliceFlag{Name: "contexts"}}},
			{Name: "matrix"},
			{Name: "guard", Subcommands: []*cli.Command{{Name: "install", Flags: []cli.Flag{&cli.StringFlag{Name: "mode"}}}}},
		}, cmds...),
		ExitErrHandler: func(*cli.Context, error) {},
	}
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	cf.AddFlags(fs)
	plugin.Adopt(app, fs)
	return app
}

func TestIntersperse(t *testing.T) {
	app := newApp(kube.NewFlags(), io.Discard)
	cases := []struct{ in, want []string }{
		{[]string{"gpuops", "order-check", "n1", "-o", "json"}, []string{"gpuops", "order-check", "-o", "json", "n1"}},
		{[]string{"gpuops", "order-check", "n1", "--all-rules", "-o=json"}, []string{"gpuops", "order-check", "--all-rules", "-o=json", "n1"}},
		{[]string{"gpuops", "-n", "x", "optout", "n1", "driver", "--timeout", "5s"}, []string{"gpuops", "-n", "x", "optout", "--timeout", "5s", "n1", "driver"}},
		// "audit" here is the value of --context, not the command.
		{[]string{"gpuops", "--context", "audit", "matrix"}, []string{"gpuops", "--context", "audit", "matrix"}},
		// a bool connection flag takes no value: "order-check" is the command
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
		if got := kubectlcli.Intersperse(app, c.in); !slices.Equal(got, c.want) {
			t.Errorf("Intersperse(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// probe runs an adopted app's command that only checks it ran, and returns
// the connection flags the arguments set.
func probe(t *testing.T, args ...string) *kube.Flags {
	t.Helper()
	cf, ran := kube.NewFlags(), false
	app := newApp(cf, io.Discard, &cli.Command{Name: "probe", Action: func(*cli.Context) error { ran = true; return nil }})
	if err := plugin.Run(context.Background(), app, append([]string{"gpuops"}, args...)); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if !ran {
		t.Fatalf("%q: the command did not run", args)
	}
	return cf
}

// Every flag of kubectl's ConfigFlags is a flag of the app and of every
// command, so it goes before or after the command.
func TestEveryKubectlConnectionFlag(t *testing.T) {
	fs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(false).AddFlags(fs)
	app := newApp(kube.NewFlags(), io.Discard)
	sets := [][]cli.Flag{app.Flags}
	for _, cmd := range append(app.Commands, app.Command("guard").Subcommands...) {
		sets = append(sets, cmd.Flags)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		names := []string{f.Name}
		if f.Shorthand != "" {
			names = append(names, f.Shorthand)
		}
		for _, flags := range sets {
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
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
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
	// the default of kube.Flags: a bound on each request
	cl, err := kube.Connect(probe(t, "--kubeconfig", empty, "-s", "https://h", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	if cl.Config.Timeout != 30*time.Second {
		t.Errorf("default request timeout %v, want 30s", cl.Config.Timeout)
	}
}

func TestInvokedAs(t *testing.T) {
	for _, tc := range []struct {
		argv0, name string
		args        []string
	}{
		{"/usr/bin/gpuops", "gpuops", []string{"/usr/bin/gpuops", "audit"}},
		{"kubectl-gpuops", "kubectl gpuops", []string{"kubectl-gpuops", "audit"}},
		{"/bin/kubectl-gpuops.exe", "kubectl gpuops", []string{"/bin/kubectl-gpuops.exe", "audit"}},
		{"/bin/kubectl_complete-gpuops", "kubectl gpuops", []string{"/bin/kubectl_complete-gpuops", "__complete", "audit"}},
	} {
		name, args := plugin.InvokedAs([]string{tc.argv0, "audit"})
		if name != tc.name || !slices.Equal(args, tc.args) {
			t.Errorf("InvokedAs(%q) = %q, %q; want %q, %q", tc.argv0, name, args, tc.name, tc.args)
		}
	}
}

// A completion request is answered from the app's own candidates, with
// the flags before or after the command.
func TestCompletion(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\ncontexts:\n- name: b\n  context: {}\n- name: a\n  context: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{"optout n1 ", "driver\tDaemonSet nvidia-driver-daemonset\ndcgm\n:4\n"},
		{"-n x optout --timeout 1s n1 d", "driver\tDaemonSet nvidia-driver-daemonset\ndcgm\n:4\n"},
		{"audit -o ", "text\naudit\n:4\n"},
		{"order-check --output=", "text\norder-check\n:4\n"},
		{"optout -l ", ":4\n"},
		// -l names the nodes: the first argument is the operand
		{"optout -l gpu=true ", "driver\tDaemonSet nvidia-driver-daemonset\ndcgm\n:4\n"},
		{"optout --selector=gpu=true d", "driver\tDaemonSet nvidia-driver-daemonset\ndcgm\n:4\n"},
		{"optout -l gpu=true driver ", ":4\n"},
		{"optout n1 driver ", ":4\n"},
		{"health a b ", "driver\tDaemonSet nvidia-driver-daemonset\ndcgm\n:4\n"},
		{"completion ", "bash\nzsh\nfish\n:4\n"},
		{"--kubeconfig " + kubeconfig + " --context ", "a\nb\n:4\n"},
		// a list of contexts: those not yet in it, after it, for another comma (4|2: no space)
		{"--kubeconfig " + kubeconfig + " audit --contexts ", "a\nb\n:6\n"},
		{"--kubeconfig " + kubeconfig + " audit --contexts b,", "b,a\n:6\n"},
		{"o", "optout\norder-check\n:4\n"},
	} {
		var out bytes.Buffer
		app := newApp(kube.NewFlags(), &out)
		args := append([]string{"gpuops", "__complete"}, strings.Split(tc.line, " ")...)
		if err := plugin.Run(context.Background(), app, args); err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got, _, _ := strings.Cut(out.String(), "Completion ended"); got != tc.want {
			t.Errorf("%q: candidates %q, want %q", tc.line, got, tc.want)
		}
	}
}
