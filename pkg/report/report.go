// Package report prints what the judges return, in the format a user asks
// for: the lab's exact text (what out/*.txt hold and the scripts print),
// JSON or YAML for programs (the same value in both), an aligned table for
// people, coloured on a terminal (wide: with the reasons), kubectl's
// node/NAME lines, JUnit XML for CI, or one HTML page of the whole fleet.
// It is the one place gpuops formats a verdict; the judges return data
// only.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// Format is an output format.
type Format string

// The output formats.
const (
	Text  Format = "text"
	JSON  Format = "json"
	YAML  Format = "yaml"
	Table Format = "table"
	// The formats below are offered only where a command asks for them.

	// JUnit is for the judges whose checks CI lists one by one (audit,
	// order-check, health).
	JUnit Format = "junit"
	// Wide is kubectl's -o wide: a person's output with more in it. For
	// audit and order-check it is the table with a WHY column, the reason
	// of each finding (audit's as --explain gives them); for watch, its
	// text lines, each after the time of its batch.
	Wide Format = "wide"
	// Name is kubectl's -o name: node/NAME of each node with a finding, one
	// a line, to pipe into kubectl (audit, order-check, summary).
	Name Format = "name"
)

// Formats lists the formats every judge prints, the default first.
var Formats = []Format{Text, JSON, YAML, Table}

// ParseFormat validates a format name: one of Formats or of a command's extra ones.
func ParseFormat(s string, extra ...Format) (Format, error) {
	return ParseFormatOf(s, slices.Concat(Formats, extra)...)
}

// ParseFormatOf validates a format name against exactly the formats a
// command prints, for those that print fewer than every judge does.
func ParseFormatOf(s string, allowed ...Format) (Format, error) {
	if f := Format(s); slices.Contains(allowed, f) {
		return f, nil
	}
	names := make([]string, len(allowed))
	for i, f := range allowed {
		names[i] = string(f)
	}
	want := strings.Join(names, ", ")
	if len(names) == 2 {
		want = names[0] + " or " + names[1] // version's "json or yaml"
	}
	return "", fmt.Errorf("unknown output format %q (want %s)", s, want)
}

// Data reports whether the format is for programs (JSON or YAML), which
// always carry every field a verdict has.
func (f Format) Data() bool { return f == JSON || f == YAML }

// Explained reports whether the format always carries the reasons of
// --explain: the data formats, and JUnit and OpenReports, whose failures
// say why.
func (f Format) Explained() bool { return f.Data() || f == JUnit || f == OpenReports }

// ColorFor reports whether output to w may be coloured: w is a terminal and
// NO_COLOR (https://no-color.org) is unset or empty.
func ColorFor(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// Printer writes verdicts in one format.
type Printer struct {
	Format    Format
	Color     bool // colour table cells; only tables have colour
	NoHeaders bool // a one-table format's rows only, without header or total line (kubectl --no-headers)
}

// data writes v as JSON (indented) or, from the same JSON, as YAML.
func (p Printer) data(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if p.Format == YAML {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeJSONLine writes v as one line of JSON (JSON Lines).
func writeJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Plain are the formats of the commands that print no table (guard status,
// optout's plan).
var Plain = []Format{Text, JSON, YAML}

// NewPrinter validates an -o value against the formats a command prints
// (Formats and its extra ones; with only, exactly those) and makes its
// printer for out: a table gets colour only on a terminal.
func NewPrinter(value string, out io.Writer, noHeaders bool, only []Format, extra ...Format) (Printer, error) {
	var f Format
	var err error
	if only != nil {
		f, err = ParseFormatOf(value, only...)
	} else {
		f, err = ParseFormat(value, extra...)
	}
	if err != nil {
		return Printer{}, err
	}
	tabular := f == Table || f == Wide
	return Printer{Format: f, Color: tabular && ColorFor(out), NoHeaders: noHeaders}, nil
}
