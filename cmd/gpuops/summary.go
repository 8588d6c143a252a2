package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/summary"
)

func summaryCommand() *cli.Command {
	return &cli.Command{
		Name:  "summary",
		Usage: "the fleet by node pool: per group and operand, how many nodes ask for it, run, miss, pause or disable it; then the nodes with findings",
		Description: "Groups the nodes by the value of a node label (--group-by, default " + summary.DefaultGroupBy + ";\n" +
			"nodes without it, or with an empty value, in " + summary.NoGroup + "). Per group and operand it counts the nodes\n" +
			"where the operand is asked (deploy label \"true\"), running (a Running pod of its DaemonSet), missing\n" +
			"(asked and not running: audit's MISSING), paused (a helper's pause value) and disabled (switched off\n" +
			"in the ClusterPolicy, deploy label \"false\", or the node's nvidia.com/gpu.deploy.operands=false); per\n" +
			"start-up rule of order-check --all-rules, the nodes that break it. Then every node with a finding\n" +
			"(missing, stuck past --stuck-after, or a broken rule), each with its reason as audit --explain gives\n" +
			"it. Exit 1 if any node has a finding.",
		Flags: append([]cli.Flag{outputFlag(report.Name)}, fleetFlags()...),
		Action: func(c *cli.Context) error {
			p, opts, err := judgeInput(c)
			if err != nil {
				return err
			}
			in, err := fleetInput(c, opts)
			if err != nil {
				return err
			}
			f, _, err := in.read(c)
			if err != nil {
				return err
			}
			if err := p.Summary(c.App.Writer, f); err != nil {
				return err
			}
			return findingsExit(f)
		},
	}
}

// Flags and plumbing shared by the fleet views (summary, report).

func fleetFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name: "group-by", Value: summary.DefaultGroupBy,
			Usage: "node label whose value groups the nodes, e.g. a node-pool label (nodes without it: " + summary.NoGroup + ")",
		},
		judgeLabFlag(), selectorFlag(), discoverFlag(), stuckAfterFlag(),
	}
}

// fleetFlagValues are a fleet view's validated flags.
type fleetFlagValues struct {
	groupBy string
	opts    read.Options
}

// fleetInput refuses a bad --group-by before anything is read.
func fleetInput(c *cli.Context, opts read.Options) (fleetFlagValues, error) {
	key := c.String("group-by")
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fleetFlagValues{}, usageError(fmt.Errorf("--group-by: invalid label key %q: %s", key, strings.Join(errs, "; ")))
	}
	opts.DaemonSets = true // for the reason of each finding
	opts.Trace = operand.Paused
	rosterOptions(c, &opts)
	return fleetFlagValues{groupBy: key, opts: opts}, nil
}

// read takes one snapshot and builds the fleet view from it (the roster's
// operands, every start-up rule the roster allows), and says where and when
// it was taken.
func (in fleetFlagValues) read(c *cli.Context) (summary.Fleet, report.Source, error) {
	s, err := readSnapshot(c, in.opts)
	if err != nil {
		return summary.Fleet{}, report.Source{}, err
	}
	src := report.Source{Namespace: s.Namespace, Selector: in.opts.NodeSelector, Taken: time.Now()}
	src.Context, src.Server = configFlags(c).Target()
	r := roster(c, s)
	for _, n := range append(slices.Clone(s.Notes), r.Notes...) {
		fmt.Fprintln(c.App.ErrWriter, "note: "+n)
	}
	clock := explain.Clock{Now: src.Taken, StuckAfter: c.Duration("stuck-after")}
	f, err := summary.Build(s, r.Roster, operand.RulesFor(r.Roster, operand.AllRules), in.groupBy, clock)
	return f, src, err
}

// findingsExit is the judges' exit code for a fleet view: 1 when any node
// has a finding.
func findingsExit(f summary.Fleet) error {
	if f.Findings() > 0 {
		return errFinding
	}
	return nil
}
