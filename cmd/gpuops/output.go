package main

import (
	"io"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

// output is -o, built and parsed here for every command: the formats the
// command prints (for the check of the value, --help and shell
// completion), and the printer Validate makes of the value. The commands
// reach the report package's printer only through it.
type output struct {
	formats   []report.Format
	usage     string
	value     string // as given; "" (no -o of version) is text
	noHeaders bool
	printer   report.Printer
}

// extraUsage says what each of the formats some judges print is.
var extraUsage = map[report.Format]string{
	report.JUnit: "junit: JUnit XML for CI, one test case per check, a failure with its reason per finding",
	report.Wide:  "wide: the table with a WHY column, the reason of each finding (audit: as --explain gives it)",
	report.Name:  "name: node/NAME of each node with a finding, one a line, for kubectl (| xargs kubectl describe)",
	report.OpenReports: "openreports: every check as OpenReports ClusterReports (openreports.io/v1alpha1), a List for\n" +
		"kubectl apply -f - (Policy Reporter, Kyverno)",
}

// judgeOutput is the -o of a judge: the formats every judge prints and
// the command's extra ones.
func judgeOutput(extra ...report.Format) output {
	usage := "output format: text (the lab's exact lines), json or yaml (the same fields), or table (aligned, coloured on a terminal unless NO_COLOR is set)"
	for _, f := range extra {
		usage += ";\n" + extraUsage[f]
	}
	return output{formats: slices.Concat(report.Formats, extra), usage: usage, value: string(report.Text)}
}

// plainOutput is the -o of the commands without a table.
func plainOutput(what string) output {
	return output{formats: report.Plain, usage: "output format of " + what + ": text, or json or yaml (the same fields)", value: string(report.Text)}
}

// outputFlag is -o, knowing its command's formats for shell completion.
type outputFlag struct {
	*cli.StringFlag
	formats []report.Format
}

func (o *output) flag() cli.Flag {
	return &outputFlag{StringFlag: &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: o.value, Usage: o.usage, Destination: &o.value}, formats: o.formats}
}

// noHeadersFlag is kubectl's --no-headers. As kubectl, the formats without
// a header ignore it.
func (o *output) noHeadersFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-headers", Destination: &o.noHeaders,
		Usage: "with -o table or wide, print the rows only: no header, no total line (other formats ignore it, as kubectl)"}
}

// formatsOf are the formats of a command's -o, for completion.
func formatsOf(cmd *cli.Command) []report.Format {
	for _, f := range cmd.Flags {
		if of, ok := f.(*outputFlag); ok {
			return of.formats
		}
	}
	return nil
}

// parse makes the printer of the -o given, for w.
func (o *output) parse(w io.Writer) error {
	if o.value == "" {
		o.printer = report.Printer{Format: report.Text}
		return nil
	}
	p, err := report.NewPrinter(o.value, w, o.noHeaders, o.formats)
	if err != nil {
		return usageError(err)
	}
	o.printer = p
	return nil
}

// format is the format -o names.
func (o *output) format() report.Format { return o.printer.Format }

// result prints one view of a cluster's verdict, or of each cluster's
// when cs is not nil.
func (o *output) result(e env, r *outcome.Result, cs []outcome.Cluster, view report.View) error {
	if cs != nil {
		return o.printer.Clusters(e.out, e.errOut, cs, view)
	}
	return o.printer.Result(e.out, e.errOut, r, view)
}
