package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/clusters"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

// Flags and plumbing shared by the judging commands: audit, order-check,
// matrix, summary, report, watch, serve.

// extraUsage says what each of the formats some judges print is.
var extraUsage = map[report.Format]string{
	report.JUnit: "junit: JUnit XML for CI, one test case per check, a failure with its reason per finding",
	report.Wide:  "wide: the table with a WHY column, the reason of each finding (audit: as --explain gives it)",
	report.Name:  "name: node/NAME of each node with a finding, one a line, for kubectl (| xargs kubectl describe)",
	report.OpenReports: "openreports: every check as OpenReports ClusterReports (openreports.io/v1alpha1), a List for\n" +
		"kubectl apply -f - (Policy Reporter, Kyverno)",
}

// outputFlag is -o with the formats every judge prints and the command's
// extra ones.
func outputFlag(extra ...report.Format) cli.Flag {
	usage := "output format: text (the lab's exact lines), json or yaml (the same fields), or table (aligned, coloured on a terminal unless NO_COLOR is set)"
	for _, f := range extra {
		usage += ";\n" + extraUsage[f]
	}
	return &formatFlag{
		StringFlag: &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: string(report.Text), Usage: usage},
		extra:      extra,
	}
}

// formatFlag is -o, knowing the formats its command prints beyond every
// judge's: for the check of its value and for shell completion.
type formatFlag struct {
	*cli.StringFlag
	extra []report.Format
}

// extraFormats are the formats a command's -o takes beyond report.Formats.
func extraFormats(cmd *cli.Command) []report.Format {
	for _, f := range cmd.Flags {
		if ff, ok := f.(*formatFlag); ok {
			return ff.extra
		}
	}
	return nil
}

// noHeadersFlag is kubectl's --no-headers. As kubectl, the formats without
// a header ignore it.
func noHeadersFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-headers", Usage: "with -o table or wide, print the rows only: no header, no total line (other formats ignore it, as kubectl)"}
}

func selectorFlag() cli.Flag {
	return &cli.StringFlag{
		Name: "selector", Aliases: []string{"l"},
		Usage: "label selector narrowing the nodes judged, as kubectl -l (default: every node)",
	}
}

// printerFor validates the --output flag against the command's formats.
func printerFor(c *cli.Context, only ...report.Format) (report.Printer, error) {
	p, err := report.NewPrinter(c.String("output"), c.App.Writer, c.Bool("no-headers"), only, extraFormats(c.Command)...)
	if err != nil {
		return p, usageError(err)
	}
	return p, nil
}

// judgeFlags are a judging command's flags, read and checked once, before
// anything is read: what to print and what the pipeline judges.
type judgeFlags struct {
	printer report.Printer
	opts    pipeline.Options
	// clusters is a run across clusters (--contexts, --all-contexts); nil
	// judges the one the connection flags name.
	clusters *clusters.Run
}

// readJudgeFlags reads the arguments and the flags every judge shares (a
// command without one of them gets its zero value): -o, -l, --discover, --all-rules,
// --stuck-after, --explain, --group-by and the namespace.
func readJudgeFlags(c *cli.Context) (judgeFlags, error) {
	var f judgeFlags
	if c.Command.ArgsUsage == "" { // a command that takes arguments says which
		if err := noArgs(c); err != nil {
			return f, err
		}
	}
	if c.String("output") != "" {
		p, err := printerFor(c)
		if err != nil {
			return f, err
		}
		f.printer = p
	}
	sel := c.String("selector")
	if _, err := labels.Parse(sel); err != nil {
		return f, usageError(fmt.Errorf("--selector: %w", err))
	}
	var group string
	if c.IsSet("group-by") || c.String("group-by") != "" {
		group = c.String("group-by")
		if errs := validation.IsQualifiedName(group); len(errs) > 0 {
			return f, usageError(fmt.Errorf("--group-by: invalid label key %q: %s", group, strings.Join(errs, "; ")))
		}
	}
	ns, err := namespace(c)
	if err != nil {
		return f, err
	}
	if f.clusters, err = clusters.FromFlags(c, configFlags(c)); err != nil {
		return f, usageError(err)
	}
	f.opts = pipeline.Options{
		Namespace: ns, NodeSelector: sel, Roster: rosterChoice(c), AllRules: c.Bool("all-rules"),
		StuckAfter: c.Duration("stuck-after"), GroupBy: group,
		// -o wide and the formats that always say why are audit --explain's.
		Explain: c.Bool("explain") || f.printer.Format.Explained() || f.printer.Format == report.Wide,
	}
	return f, nil
}

func rosterChoice(c *cli.Context) pipeline.Choice {
	switch {
	case !c.IsSet("discover"):
		return pipeline.AutoRoster
	case c.Bool("discover"):
		return pipeline.DiscoverRoster
	}
	return pipeline.LabRoster
}

// judge runs the pipeline with the command's options (the whole cluster,
// the nodes -l selects, or those f.opts names).
func judge(c *cli.Context, f judgeFlags) (*outcome.Result, error) {
	cl, err := connect(c)
	if err != nil {
		return nil, err
	}
	reader, err := cl.ForReading()
	if err != nil {
		return nil, err
	}
	return pipeline.Run(c.Context, reader, f.opts)
}

// judgeAndReport is a judging command's body: the pipeline, one view of its
// result, and exit 1 when failed says the verdict is a finding.
func judgeAndReport(c *cli.Context, f judgeFlags, view report.View, failed func(*outcome.Result) bool) error {
	if f.clusters != nil {
		cs := f.clusters.Judge(c.Context, c.App.ErrWriter, f.opts)
		if err := f.printer.Clusters(c.App.Writer, c.App.ErrWriter, cs, view); err != nil {
			return err
		}
		return clustersExit(cs, failed)
	}
	r, err := judge(c, f)
	if err != nil {
		return err
	}
	if err := f.printer.Result(c.App.Writer, c.App.ErrWriter, r, view); err != nil {
		return err
	}
	return findingIf(failed(r))
}

// noArgs refuses positional arguments for a command that takes none.
func noArgs(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError(fmt.Errorf("unexpected arguments %q", c.Args().Slice()))
	}
	return nil
}

// clustersExit is a run's exit across clusters: 2 when one could not be
// judged, else 1 when one has a finding.
func clustersExit(cs []outcome.Cluster, failed func(*outcome.Result) bool) error {
	found, err := clusters.Verdict(cs, failed)
	if err != nil {
		return err
	}
	return findingIf(found)
}
