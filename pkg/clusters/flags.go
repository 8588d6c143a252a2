package clusters

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
)

// category groups the flags in --help.
const category = "Many clusters"

// Flags are the flags of a judge that select the clusters of a run.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "contexts", Category: category, Usage: "judge these kubeconfig contexts (`a,b,…`), each with its own connection; the\n" +
			"output is stamped with the context: \"<context>: \" before each text line, a leading CONTEXT column in\n" +
			"tables, {\"clusters\":[{\"context\",\"server\",\"error\"?,…}]} in JSON and YAML, a JUnit testsuite per\n" +
			"context. A context that cannot be judged is an error entry and exit 2; else exit 1 if any has a finding"},
		&cli.BoolFlag{Name: "all-contexts", Category: category, Usage: "judge every context of the kubeconfig, as --contexts"},
		&cli.StringFlag{Name: "context-match", Category: category, Usage: "judge the contexts whose name matches this regular expression (of --contexts' when given, else of all)"},
		&cli.IntFlag{Name: "parallel", Category: category, Value: DefaultParallel, Usage: "judge at most `N` contexts at once; each API request is bounded by --request-timeout"},
	}
}

// Run is a run across clusters: the contexts, and how many at once.
type Run struct {
	Targets  []Target
	Parallel int
}

// FromFlags reads the flags of a command that has them (Flags) and
// resolves them against the connection flags f, reading no cluster: nil
// without --contexts, --all-contexts, --context-match or --parallel. Its
// errors are bad input.
func FromFlags(c *cli.Context, f *kube.Flags) (*Run, error) {
	s := Selection{Names: c.StringSlice("contexts"), All: c.Bool("all-contexts"), Match: c.String("context-match"), Parallel: c.Int("parallel")}
	if !s.Active() && !c.IsSet("parallel") {
		return nil, nil
	}
	targets, err := Resolve(f, s)
	if err != nil {
		return nil, err
	}
	return &Run{Targets: targets, Parallel: s.Parallel}, nil
}
