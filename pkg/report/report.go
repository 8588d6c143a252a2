// Package report prints what the judges return, in the format a user asks
// for: the lab's exact text (what out/*.txt hold and the scripts print),
// JSON or YAML for programs (the same value in both), or an aligned table for
// people, coloured on a terminal. It is the one place gpuops formats a
// verdict; the judges return data only.
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
)

// Formats lists the formats, the default first.
var Formats = []Format{Text, JSON, YAML, Table}

// ParseFormat validates a format name.
func ParseFormat(s string) (Format, error) { return ParseFormatOf(s, Formats) }

// ParseFormatOf validates a format name against the formats a command offers.
func ParseFormatOf(s string, formats []Format) (Format, error) {
	if f := Format(s); slices.Contains(formats, f) {
		return f, nil
	}
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown output format %q (want %s)", s, strings.Join(names, ", "))
}

// Data reports whether the format is for programs (JSON or YAML), which
// always carry every field a verdict has.
func (f Format) Data() bool { return f == JSON || f == YAML }

// ColorFor reports whether output to w may be coloured: w is a terminal and
// NO_COLOR (https://no-color.org) is unset or empty.
func ColorFor(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// Printer writes verdicts in one format.
type Printer struct {
	Format Format
	Color  bool // colour table cells; only the table format has colour
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
