package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kubectlcli"
)

// Every positional argument of every command completes to its kind, in each
// form the command takes (optout -l SELECTOR <TAB> completes an operand,
// optout <TAB> a node), and nothing past the last: each kind's completer
// stands in as the kind's own name.
func TestEveryArgumentCompletesItsKind(t *testing.T) {
	p := plugin
	p.Args = map[string]kubectlcli.Completer{}
	for kind := range plugin.Args {
		p.Args[kind] = kubectlcli.Words(kind)
	}
	complete := func(line []string) string {
		var out bytes.Buffer
		app := newApp("gpuops", &out, io.Discard)
		if err := p.Run(context.Background(), app, slices.Concat([]string{"gpuops", "__complete"}, line)); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		var candidates []string // one a line, up to Cobra's ":<directive>"
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, ":") {
				break
			}
			candidates = append(candidates, l)
		}
		return strings.Join(candidates, "\n")
	}
	checked := map[string]bool{}
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			at := append(slices.Clone(path), cmd.Name)
			walk(at, cmd.Subcommands)
			for _, f := range kubectlcli.FormsOf(cmd) {
				line := at
				if f.Flag != "" {
					line = append(slices.Clone(at), "-"+f.Flag, "x")
				}
				for i, a := range f.Args {
					want := a.Kind
					if a.Kind == "SHELL" {
						want = "bash\nzsh\nfish"
					}
					if got := complete(append(slices.Clone(line), "")); got != want {
						t.Errorf("%s <TAB>: %q, want argument %d's kind %s", strings.Join(line, " "), got, i+1, a.Kind)
					}
					line = append(line, "x")
					checked[a.Kind] = true
				}
				last := f.Args[len(f.Args)-1]
				if got := complete(append(slices.Clone(line), "")); last.Many && got != last.Kind || !last.Many && got != "" {
					t.Errorf("%s <TAB>: %q after the last argument", strings.Join(line, " "), got)
				}
			}
		}
	}
	walk(nil, newApp("gpuops", io.Discard, io.Discard).Commands)
	for _, kind := range []string{nodeArg, operandArg, targetArg, "SHELL"} {
		if !checked[kind] {
			t.Errorf("no command's argument of kind %s was checked", kind)
		}
	}
}
