package main

import (
	"io"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestIntersperse(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	cases := []struct{ in, want []string }{
		{[]string{"gpuops", "order-check", "n1", "-o", "json"}, []string{"gpuops", "order-check", "-o", "json", "n1"}},
		{[]string{"gpuops", "order-check", "n1", "--all-rules", "-o=json"}, []string{"gpuops", "order-check", "--all-rules", "-o=json", "n1"}},
		{[]string{"gpuops", "-n", "x", "optout", "n1", "driver", "--timeout", "5s"}, []string{"gpuops", "-n", "x", "optout", "--timeout", "5s", "n1", "driver"}},
		// "audit" here is the value of --context, not the command.
		{[]string{"gpuops", "--context", "audit", "matrix"}, []string{"gpuops", "--context", "audit", "matrix"}},
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

// A connection flag may come before or after the command; the innermost wins.
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	cases := []struct {
		args    []string
		want    string
		wantSet bool
	}{
		{[]string{"gpuops", "probe"}, "gpu-operator", false},
		{[]string{"gpuops", "-n", "a", "probe"}, "a", true},
		{[]string{"gpuops", "probe", "-n", "b"}, "b", true},
		{[]string{"gpuops", "--namespace", "a", "probe", "--namespace=b"}, "b", true},
	}
	for _, c := range cases {
		var got string
		var set bool
		app := newApp(io.Discard, io.Discard)
		probe := &cli.Command{Name: "probe", Action: func(ctx *cli.Context) error {
			got, set = globalString(ctx, "namespace")
			return nil
		}}
		app.Commands = append(app.Commands, probe)
		probe.Flags = globalFlags()
		if err := app.Run(c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got != c.want || set != c.wantSet {
			t.Errorf("%q: namespace %q (set %v), want %q (set %v)", c.args, got, set, c.want, c.wantSet)
		}
	}
}
