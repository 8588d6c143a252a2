package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

// judging are the options the judges share (audit, order-check, matrix,
// summary, health, upgrades, report, watch, serve), each command binding
// the flags it takes; a flag it does not take leaves its zero value.
// Complete and Validate make opts, what the pipeline judges.
type judging struct {
	env
	lab        labOption
	selector   string
	discover   *bool // nil: unset, discover on a GPU Operator install
	allRules   bool
	explain    bool
	stuckAfter time.Duration
	groupBy    string
	groupBySet bool
	many       manyClusters
	opts       pipeline.Options
}

func (j *judging) selectorFlag() cli.Flag {
	return &cli.StringFlag{
		Name: "selector", Aliases: []string{"l"}, Destination: &j.selector,
		Usage: "label selector narrowing the nodes judged, as kubectl -l (default: every node)",
	}
}

func (j *judging) discoverFlag() cli.Flag {
	return &cli.BoolFlag{
		Name:   "discover",
		Action: func(_ *cli.Context, on bool) error { j.discover = &on; return nil },
		Usage: "judge the operands the namespace's DaemonSets run (any nvidia.com/gpu.deploy.<name> key in a\n" +
			"DaemonSet's node selection is operand <name>), not only the lab's five. Unset, gpuops discovers on\n" +
			"a GPU Operator install (a ClusterPolicy for the namespace, or a DaemonSet the operator renders)\n" +
			"and judges the lab's five elsewhere; --discover=false always judges the lab's five",
	}
}

func (j *judging) stuckAfterFlag() cli.Flag {
	return &cli.DurationFlag{
		Name: "stuck-after", Value: pipeline.DefaultStuckAfter, Destination: &j.stuckAfter,
		Usage: "a helper's pause of an operand (paused-for-driver-upgrade, -mig-change, -vgpu-change) older than\n" +
			"this is STUCK, a finding; its age is the time its writer last wrote the node (managedFields). 0: never",
	}
}

func (j *judging) explainFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "explain", Destination: &j.explain,
		Usage: "say why each operand is MISSING or STUCK, which pods are UNEXPECTED on nodes with\n" +
			"nvidia.com/gpu.deploy.operands=false, and WARNING of labels in another state: a helper's pause (who,\n" +
			"when, its progress), a host that provides the operand, a value that is neither true nor false,\n" +
			"deploy labels on a node without nvidia.com/gpu.present=true; notes on stderr (JSON output always\n" +
			"includes all of this, and the operands the ClusterPolicy switches off)",
	}
}

func (j *judging) allRulesFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "all-rules", Destination: &j.allRules,
		Usage: "check the operator's whole start-up order: device plugin, GFD, DCGM, DCGM exporter, MIG manager and\n" +
			"the operator validator need the container toolkit; the toolkit and the validator need a driver (a\n" +
			"driver pod, or driver label false or pre-installed: the host's); the vGPU device manager needs the\n" +
			"vGPU manager; the DRA validator, DCGM and exporter need the DRA kubelet plugin, which needs a driver.\n" +
			"An operand the ClusterPolicy switches off counts as the hosts'",
	}
}

func (j *judging) groupByFlag(value string) cli.Flag {
	return &cli.StringFlag{
		Name: "group-by", Value: value, Destination: &j.groupBy,
		Action: func(*cli.Context, string) error { j.groupBySet = true; return nil },
		Usage:  "node label whose value groups the nodes, e.g. a node-pool label (nodes without it: " + pipeline.NoGroup + ")",
	}
}

// Complete resolves the namespace (-n, else the --lab spec's).
func (j *judging) Complete(*cli.Context) error { return j.lab.complete(j.kube) }

// validate checks the flags, o's -o among them (nil for a command without
// one), and makes opts: the lab's namespace, the nodes -l selects, the
// rules, and the reasons when the format always says why.
func (j *judging) validate(o *output) error {
	if j.stuckAfter < 0 {
		return usageError(fmt.Errorf("--stuck-after %s: want 0 (never) or a positive duration such as 30m", j.stuckAfter))
	}
	var f report.Format
	if o != nil {
		if err := o.parse(j.out); err != nil {
			return err
		}
		f = o.format()
	}
	if _, err := labels.Parse(j.selector); err != nil {
		return usageError(fmt.Errorf("--selector: %w", err))
	}
	if j.groupBySet || j.groupBy != "" {
		if errs := validation.IsQualifiedName(j.groupBy); len(errs) > 0 {
			return usageError(fmt.Errorf("--group-by: invalid label key %q: %s", j.groupBy, strings.Join(errs, "; ")))
		}
	}
	if err := j.many.validate(j.kube); err != nil {
		return usageError(err)
	}
	roster := pipeline.AutoRoster
	switch {
	case j.discover == nil:
	case *j.discover:
		roster = pipeline.DiscoverRoster
	default:
		roster = pipeline.LabRoster
	}
	j.opts = pipeline.Options{
		Namespace: j.lab.namespace, NodeSelector: j.selector, Roster: roster, AllRules: j.allRules,
		StuckAfter: j.stuckAfter, GroupBy: j.groupBy,
		// -o wide and the formats that always say why are audit --explain's.
		Explain: j.explain || f.Explained() || f == report.Wide,
	}
	return nil
}

// judge runs the pipeline with opts on the cluster the connection flags
// name, or on each of a run across clusters (then r is nil).
func (j *judging) judge(ctx context.Context) (r *outcome.Result, cs []outcome.Cluster, err error) {
	if j.many.run != nil {
		return nil, j.many.run.Judge(ctx, j.errOut, j.opts), nil
	}
	cl, err := j.connect()
	if err != nil {
		return nil, nil, err
	}
	reader, err := cl.ForReading()
	if err != nil {
		return nil, nil, err
	}
	r, err = pipeline.Run(ctx, reader, j.opts)
	return r, nil, err
}

// exitOf is a judge's exit: 2 when a cluster could not be judged, else 1
// when failed says a verdict is a finding.
func exitOf(r *outcome.Result, cs []outcome.Cluster, failed func(*outcome.Result) bool) error {
	found := r != nil && failed(r)
	if cs != nil {
		var err error
		if found, err = clusters.Verdict(cs, failed); err != nil {
			return err
		}
	}
	return findingIf(found)
}

// judgeOptions are a one-shot judge's: the shared options, -o, and the
// view it prints and what of its verdict is a finding.
type judgeOptions struct {
	judging
	output
	view   report.View
	failed func(*outcome.Result) bool
	// also sets what the command judges beyond the flags; nil for nothing.
	also func(*pipeline.Options)
}

func (o *judgeOptions) Validate() error {
	if err := o.validate(&o.output); err != nil {
		return err
	}
	if o.also != nil {
		o.also(&o.opts)
	}
	return nil
}

// Run judges, prints the view and exits 1 on a finding.
func (o *judgeOptions) Run(ctx context.Context) error {
	r, cs, err := o.judge(ctx)
	if err != nil {
		return err
	}
	if err := o.result(o.env, r, cs, o.view); err != nil {
		return err
	}
	return exitOf(r, cs, o.failed)
}

// manyClusters are the flags that make a judge's run one across clusters.
type manyClusters struct {
	sel         clusters.Selection
	contexts    cli.StringSlice
	parallelSet bool
	// run is the run across clusters; nil judges the one cluster the
	// connection flags name.
	run *clusters.Run
}

// manyCategory groups the flags in --help.
const manyCategory = "Many clusters"

func (m *manyClusters) flags() []cli.Flag {
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

// validate resolves the contexts against the connection flags f, reading
// no cluster: no run without --contexts, --all-contexts, --context-match
// or --parallel.
func (m *manyClusters) validate(f *kube.Flags) error {
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

// newJudge is a one-shot judge's Options, printing view with the formats
// of out; failed says which verdicts are findings (exit 1).
func newJudge(e env, out output, view report.View, failed func(*outcome.Result) bool) *judgeOptions {
	return &judgeOptions{judging: judging{env: e}, output: out, view: view, failed: failed}
}
