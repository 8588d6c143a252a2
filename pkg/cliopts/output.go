package cliopts

import (
	"io"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
)

// Output is -o, built and parsed here for every command: the formats the
// command prints (for the check of the value, --help and shell
// completion), and the printer Parse makes of the value. The commands
// reach the report package's printer only through it.
type Output struct {
	Formats   []report.Format
	Usage     string
	Value     string // as given; "" (no -o of version) is text
	NoHeaders bool
	Printer   report.Printer
}

// extraUsage says what each of the formats some judges print is.
var extraUsage = map[report.Format]string{
	report.JUnit: "junit: JUnit XML for CI, one test case per check, a failure with its reason per finding",
	report.Wide:  "wide: the table with a WHY column, the reason of each finding (audit: as --explain gives it)",
	report.Name:  "name: node/NAME of each node with a finding, one a line, for kubectl (| xargs kubectl describe)",
	report.OpenReports: "openreports: every check as OpenReports ClusterReports (openreports.io/v1alpha1), a List for\n" +
		"kubectl apply -f - (Policy Reporter, Kyverno)",
}

// JudgeOutput is the -o of a judge: the formats every judge prints and
// the command's extra ones.
func JudgeOutput(extra ...report.Format) Output {
	usage := "output format: text (the lab's exact lines), json or yaml (the same fields), or table (aligned, coloured on a terminal unless NO_COLOR is set)"
	for _, f := range extra {
		usage += ";\n" + extraUsage[f]
	}
	return Output{Formats: slices.Concat(report.Formats, extra), Usage: usage, Value: string(report.Text)}
}

// PlainOutput is the -o of the commands without a table, and the
// command's extra formats.
func PlainOutput(what string, extra ...report.Format) Output {
	usage := "output format of " + what + ": text, or json or yaml (the same fields)"
	for _, f := range extra {
		usage += ";\n" + extraUsage[f]
	}
	return Output{Formats: slices.Concat(report.Plain, extra), Usage: usage, Value: string(report.Text)}
}

// outputFlag is -o, knowing its command's formats for shell completion.
type outputFlag struct {
	*cli.StringFlag
	formats []report.Format
}

// Flag is -o.
func (o *Output) Flag() cli.Flag {
	return &outputFlag{StringFlag: &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: o.Value, Usage: o.Usage, Destination: &o.Value}, formats: o.Formats}
}

// NoHeadersFlag is kubectl's --no-headers. As kubectl, the formats
// without a header ignore it.
func (o *Output) NoHeadersFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-headers", Destination: &o.NoHeaders,
		Usage: "with -o table or wide, print the rows only: no header, no total line (other formats ignore it, as kubectl)"}
}

// FormatsOf are the formats of a command's -o, for completion.
func FormatsOf(cmd *cli.Command) []report.Format {
	for _, f := range cmd.Flags {
		if of, ok := f.(*outputFlag); ok {
			return of.formats
		}
	}
	return nil
}

// Parse makes the printer of the -o given, for w.
func (o *Output) Parse(w io.Writer) error {
	if o.Value == "" {
		o.Printer = report.Printer{Format: report.Text}
		return nil
	}
	p, err := report.NewPrinter(o.Value, w, o.NoHeaders, o.Formats)
	if err != nil {
		return UsageError(err)
	}
	o.Printer = p
	return nil
}

// Format is the format -o names.
func (o *Output) Format() report.Format { return o.Printer.Format }

// Result prints one view of a cluster's result, or of each cluster's
// when cs is not nil.
func (o *Output) Result(e Env, r *outcome.Result, cs []outcome.Cluster, view report.View) error {
	if cs != nil {
		return o.Printer.Clusters(e.Out, e.ErrOut, cs, view)
	}
	return o.Printer.Result(e.Out, e.ErrOut, r, view)
}
