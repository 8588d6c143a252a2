package cliopts

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/kube"
)

// Clusters are the flags that make a judge's run one across clusters.
type Clusters struct {
	sel         clusters.Selection
	contexts    cli.StringSlice
	parallelSet bool
	// run is the run across clusters; nil judges the one cluster the
	// connection flags name.
	run *clusters.Run
}

// manyCategory groups the flags in --help.
const manyCategory = "Many clusters"

func (m *Clusters) Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "contexts", Category: manyCategory, Destination: &m.contexts,
			Usage: "judge these kubeconfig contexts (`a,b,…`), each with its own connection; the\n" +
				"output is stamped with the context: \"<context>: \" before each text line, a leading CONTEXT column in\n" +
				"tables, {\"clusters\":[{\"context\",\"server\",\"error\"?,…}]} in JSON and YAML, a JUnit testsuite per\n" +
				"context. A context that cannot be judged is an error entry and exit 2; else exit 1 if any has a finding"},
		&cli.BoolFlag{Name: "all-contexts", Category: manyCategory, Destination: &m.sel.All, Usage: "judge every context of the kubeconfig, as --contexts"},
		&cli.StringFlag{Name: "context-match", Category: manyCategory, Destination: &m.sel.Match,
			Usage: "judge the contexts whose name matches this regular expression (of --contexts' when given, else of all)"},
		&cli.IntFlag{Name: "parallel", Category: manyCategory, Value: clusters.DefaultParallel, Destination: &m.sel.Parallel,
			Action: func(*cli.Context, int) error { m.parallelSet = true; return nil },
			Usage:  "judge at most `N` contexts at once; each API request is bounded by --request-timeout"},
	}
}

// given reports whether a flag asks for a run across clusters.
func (m *Clusters) given() bool {
	return len(m.contexts.Value()) > 0 || m.sel.All || m.sel.Match != "" || m.parallelSet
}

// complete resolves the contexts against the connection flags f, reading
// no cluster: no run without --contexts, --all-contexts, --context-match
// or --parallel.
func (m *Clusters) complete(f *kube.Flags) error {
	m.sel.Names = m.contexts.Value()
	if !m.sel.Active() && !m.parallelSet {
		return nil
	}
	targets, err := clusters.Resolve(f, m.sel)
	if err != nil {
		return err
	}
	m.run = &clusters.Run{Targets: targets, Parallel: m.sel.Parallel}
	return nil
}
