package cliopts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

// Judging are the options the judges share (audit, order-check, matrix,
// summary, health, upgrades, report, watch, serve), each command binding
// the flags it takes; a flag it does not take leaves its zero value.
// Complete and Validate make Opts, what the pipeline judges.
type Judging struct {
	Env
	Lab        Lab
	Selector   string
	discover   *bool // nil: unset, discover on a GPU Operator install
	AllRules   bool
	Explain    bool
	StuckAfter time.Duration
	GroupBy    string
	groupBySet bool
	Logs       bool
	Many       Clusters
	From       From
	Opts       pipeline.Options
}

func (j *Judging) SelectorFlag() cli.Flag {
	return &cli.StringFlag{
		Name: "selector", Aliases: []string{"l"}, Destination: &j.Selector,
		Usage: "label selector narrowing the nodes judged, as kubectl -l (default: every node)",
	}
}

func (j *Judging) DiscoverFlag() cli.Flag {
	return &cli.BoolFlag{
		Name:   "discover",
		Action: func(_ *cli.Context, on bool) error { j.discover = &on; return nil },
		Usage: "judge the operands the namespace's DaemonSets run (any nvidia.com/gpu.deploy.<name> key in a\n" +
			"DaemonSet's node selection is operand <name>), not only the lab's five. Unset, gpuops discovers on\n" +
			"a GPU Operator install (a ClusterPolicy for the namespace, or a DaemonSet the operator renders)\n" +
			"and judges the lab's five elsewhere; --discover=false always judges the lab's five",
	}
}

func (j *Judging) StuckAfterFlag() cli.Flag {
	return &cli.DurationFlag{
		Name: "stuck-after", Value: pipeline.DefaultStuckAfter, Destination: &j.StuckAfter,
		Usage: "a helper's pause of an operand (paused-for-driver-upgrade, -mig-change, -vgpu-change) older than\n" +
			"this is STUCK, a finding; its age is the time its writer last wrote the node (managedFields). 0: never",
	}
}

func (j *Judging) ExplainFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "explain", Destination: &j.Explain,
		Usage: "say why each operand is MISSING or STUCK, which pods are UNEXPECTED on nodes with\n" +
			"nvidia.com/gpu.deploy.operands=false, and WARNING of labels in another state: a helper's pause (who,\n" +
			"when, its progress), a host that provides the operand, a value that is neither true nor false,\n" +
			"deploy labels on a node without nvidia.com/gpu.present=true; notes on stderr (JSON output always\n" +
			"includes all of this, and the operands the ClusterPolicy switches off)",
	}
}

func (j *Judging) AllRulesFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "all-rules", Destination: &j.AllRules,
		Usage: "check the operator's whole start-up order: device plugin, GFD, DCGM, DCGM exporter, MIG manager and\n" +
			"the operator validator need the container toolkit; the toolkit and the validator need a driver (a\n" +
			"driver pod, or driver label false or pre-installed: the host's); the vGPU device manager needs the\n" +
			"vGPU manager; the DRA validator, DCGM and exporter need the DRA kubelet plugin, which needs a driver.\n" +
			"An operand the ClusterPolicy switches off counts as the hosts'",
	}
}

func (j *Judging) GroupByFlag(value string) cli.Flag {
	return &cli.StringFlag{
		Name: "group-by", Value: value, Destination: &j.GroupBy,
		Action: func(*cli.Context, string) error { j.groupBySet = true; return nil },
		Usage:  "node label whose value groups the nodes, e.g. a node-pool label (nodes without it: " + pipeline.NoGroup + ")",
	}
}

// LogsFlag is --logs: the failing containers' logs, matched against the
// catalog of known host faults (pkg/signature).
func (j *Judging) LogsFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "logs", Destination: &j.Logs,
		Usage: "read the last lines of each failing container's log on the unusable GPU nodes (the instance before\n" +
			"for a crash loop; at most " + fmt.Sprint(pipeline.MaxLogs) + " a run) and name the host's fault a known line shows as the\n" +
			"node's hint (nouveau loaded, a driver already in use, no kernel headers, Secure Boot, SELinux, no\n" +
			"fabric manager, ...; codes in docs/troubleshooting.md). Needs get on pods/log; without it, a note",
	}
}

// NodeFlags are the flags of a judge of nodes (audit, health): -o and
// --no-headers of out, --lab, -l, --explain, --discover, --stuck-after and
// the sources' flags.
func (j *Judging) NodeFlags(out *Output) []cli.Flag {
	return append([]cli.Flag{out.Flag(), out.NoHeadersFlag(), j.Lab.JudgeFlag(), j.SelectorFlag(), j.ExplainFlag(), j.DiscoverFlag(), j.StuckAfterFlag()}, j.SourceFlags()...)
}

// FleetFlags are the fleet views' (summary, report): nodes grouped by
// --group-by.
func (j *Judging) FleetFlags() []cli.Flag {
	return append([]cli.Flag{j.GroupByFlag(pipeline.DefaultGroupBy), j.Lab.JudgeFlag(), j.SelectorFlag(), j.DiscoverFlag(), j.StuckAfterFlag()}, j.SourceFlags()...)
}

// SourceFlags are what a judge reads instead of the one cluster the
// connection flags name: many clusters, or --from's input.
func (j *Judging) SourceFlags() []cli.Flag { return append(j.Many.Flags(), j.From.Flags()...) }

// FleetOptions are a fleet view's: every start-up rule the roster allows,
// each finding with its reason, each node's health, the driver rollout,
// where the GPUs are.
func FleetOptions(p *pipeline.Options) {
	p.AllRules, p.Explain, p.Health, p.Upgrades, p.Capacity = true, true, true, true, true
}

// Complete reads --from's input, resolves the namespace (-n, else the
// --lab spec's, else the input's header's) and fills the rest (Fill) for
// a command without -o.
func (j *Judging) Complete(*cli.Context) error { return j.CompleteWith(nil) }

// CompleteWith is Complete for a command that prints with o.
func (j *Judging) CompleteWith(o *Output) error {
	if err := j.From.Complete(); err != nil {
		return err
	}
	if err := j.Lab.Complete(j.Kube); err != nil {
		return err
	}
	if ns := j.From.Namespace(); ns != "" && *j.Kube.Namespace == "" && j.Lab.Given == nil {
		j.Lab.Namespace = ns
	}
	return j.Fill(o)
}

// Fill parses o's -o (nil for a command without one), settles --from's
// time and what goes with it, resolves the contexts of a run across
// clusters, and makes Opts: the lab's namespace,
// the nodes -l selects, the rules, and the reasons when the format always
// says why.
func (j *Judging) Fill(o *Output) error {
	var f report.Format
	if o != nil {
		if err := o.Parse(j.Out); err != nil {
			return err
		}
		f = o.Format()
	}
	if err := j.From.fill(j.Many.given(), j.Logs); err != nil {
		return UsageError(err)
	}
	if err := j.Many.complete(j.Kube); err != nil {
		return UsageError(err)
	}
	roster := pipeline.AutoRoster
	switch {
	case j.discover == nil:
	case *j.discover:
		roster = pipeline.DiscoverRoster
	default:
		roster = pipeline.LabRoster
	}
	j.Opts = pipeline.Options{
		Namespace: j.Lab.Namespace, NodeSelector: j.Selector, Roster: roster, AllRules: j.AllRules,
		StuckAfter: j.StuckAfter, GroupBy: j.GroupBy, Logs: j.Logs, Now: j.From.at,
		// -o wide and the formats that always say why are audit --explain's.
		Explain: j.Explain || f.Explained() || f == report.Wide,
	}
	return nil
}

// Validate checks the flags; it changes nothing.
func (j *Judging) Validate() error {
	if j.StuckAfter < 0 {
		return UsageError(fmt.Errorf("--stuck-after %s: want 0 (never) or a positive duration such as 30m", j.StuckAfter))
	}
	if _, err := labels.Parse(j.Selector); err != nil {
		return UsageError(fmt.Errorf("--selector: %w", err))
	}
	if j.groupBySet || j.GroupBy != "" {
		if errs := validation.IsQualifiedName(j.GroupBy); len(errs) > 0 {
			return UsageError(fmt.Errorf("--group-by: invalid label key %q: %s", j.GroupBy, strings.Join(errs, "; ")))
		}
	}
	return nil
}

// Judge runs the pipeline with Opts on the cluster the connection flags
// name, or on each of a run across clusters (then r is nil).
func (j *Judging) Judge(ctx context.Context) (r *outcome.Result, cs []outcome.Cluster, err error) {
	if j.Many.run != nil {
		return nil, j.Many.run.Judge(ctx, j.ErrOut, j.Opts), nil
	}
	reader, err := j.Reader()
	if err != nil {
		return nil, nil, err
	}
	r, err = pipeline.Run(ctx, reader, j.Opts)
	return r, nil, j.Done(err)
}

// Reader is the client the judges read with: --from's input, else the
// cluster the connection flags name.
func (j *Judging) Reader() (kubernetes.Interface, error) {
	if j.From.Set() {
		return j.From.reader()
	}
	return kube.ConnectReading(j.Kube)
}

// Target names the cluster judged: the kubeconfig's context and server,
// or with --from those the input's header recorded.
func (j *Judging) Target() (context, server string) {
	if j.From.Set() {
		return j.From.target()
	}
	return j.Kube.Target()
}

// Done is what a judge's read ends with: err, and with --from what the
// input lacked (From.done).
func (j *Judging) Done(err error) error {
	if !j.From.Set() {
		return err
	}
	return j.From.done(err, j.ErrOut)
}

// ExitOf is a judge's exit: 2 when a cluster could not be judged, else 1
// when failed says a verdict is a finding.
func ExitOf(r *outcome.Result, cs []outcome.Cluster, failed func(*outcome.Result) bool) error {
	found := r != nil && failed(r)
	if cs != nil {
		var err error
		if found, err = clusters.AnyFailed(cs, failed); err != nil {
			return err
		}
	}
	return FindingIf(found)
}
