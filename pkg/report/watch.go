package report

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Deleted is the status of a node that is gone (deleted, or no longer
// selected), as kubectl names that watch event.
const Deleted = "DELETED"

// Watch prints the batches of a live tracker: the first one whole, then what
// changed, as kubectl get -w does.
//
//	text:  the lines of audit and order-check of each node that changed
//	       (<node> OK | <node> MISSING <operand> ...; <node> ok | <node> <finding>),
//	       with --explain's reasons; <node> DELETED for a node gone
//	wide:  the same, each line after the time of its batch
//	json:  one object per changed node and line, reasons included
//	yaml:  the same objects, one YAML document each
//	table: node × operand with STATUS and ORDER; on a terminal redrawn in
//	       place, elsewhere a row per change under one header
type Watch struct {
	w       io.Writer
	p       Printer
	explain bool
	redraw  bool

	nodes  map[string]*verdict.Verdict // the table's current state
	widths []int                       // of the rows printed so far
}

// Watch makes a printer of batches. Explain adds reasons to text lines;
// JSON and YAML always have them. Redraw makes a table redraw itself in place (for a
// terminal).
func (p Printer) Watch(w io.Writer, explain, redraw bool) *Watch {
	return &Watch{w: w, p: p, explain: explain || p.Format.Data(), redraw: redraw, nodes: map[string]*verdict.Verdict{}}
}

// Batch prints one batch.
func (x *Watch) Batch(b verdict.Batch) error {
	if len(b.Changes) == 0 && !b.Initial {
		return nil
	}
	var out strings.Builder
	switch x.p.Format {
	case JSON:
		disabled := explain.DisabledOf(b.Roster)
		for _, c := range b.Changes {
			if err := writeJSONLine(&out, jsonChange(b.Time, disabled, c)); err != nil {
				return err
			}
		}
	case YAML:
		disabled := explain.DisabledOf(b.Roster)
		for _, c := range b.Changes {
			out.WriteString("---\n")
			if err := x.p.data(&out, jsonChange(b.Time, disabled, c)); err != nil {
				return err
			}
		}
	case Table:
		x.table(&out, b)
	default:
		for _, c := range b.Changes {
			x.lines(&out, c)
		}
		if x.p.Format == Wide {
			stamp := b.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00") + " "
			s := strings.TrimSuffix(out.String(), "\n")
			out.Reset()
			if s != "" {
				out.WriteString(stamp + strings.ReplaceAll(s, "\n", "\n"+stamp) + "\n")
			}
		}
	}
	_, err := io.WriteString(x.w, out.String())
	return err
}

// lines writes a change as text: the node's audit lines if they changed,
// its order lines if they changed.
func (x *Watch) lines(b *strings.Builder, c verdict.Change) {
	if c.After == nil {
		fmt.Fprintf(b, "%s %s\n", c.Before.Node, Deleted)
		return
	}
	a := c.After
	if c.Before == nil || !slices.Equal(c.Before.Audit.Missing, a.Audit.Missing) || !slices.Equal(c.Before.Audit.Stuck, a.Audit.Stuck) ||
		(x.explain && !reflect.DeepEqual(c.Before.Why(), a.Why())) {
		b.WriteString(text(auditLines(a, x.explain)))
	}
	if c.Before == nil || !slices.Equal(c.Before.Order.Findings, a.Order.Findings) {
		if a.Order.OK() {
			fmt.Fprintf(b, "%s ok\n", a.Node)
		}
		for _, f := range a.Order.Findings {
			fmt.Fprintf(b, "%s %s\n", a.Node, f)
		}
	}
}

// watchLine is a change in JSON or YAML: the node's whole verdict after it.
type watchLine struct {
	Time     time.Time       `json:"time"`
	Node     string          `json:"node"`
	Deleted  bool            `json:"deleted,omitempty"`
	OK       bool            `json:"ok"`
	Asked    []string        `json:"asked"`
	Missing  []string        `json:"missing"`
	Stuck    []string        `json:"stuck,omitempty"`
	Findings []string        `json:"findings"`
	Present  map[string]bool `json:"present"`
	Explain  explain.Report  `json:"explain"` // as audit -o json has it
}

// The explanation is the node's, its lists [] when it has none, with the
// roster's operands switched off (disabled).
func jsonChange(t time.Time, disabled []explain.Off, c verdict.Change) watchLine {
	if c.After == nil {
		return watchLine{Time: t, Node: c.Before.Node, Deleted: true, OK: true, Asked: []string{}, Missing: []string{}, Findings: []string{},
			Present: map[string]bool{}, Explain: explain.Empty()}
	}
	v := c.After
	why := explain.Empty()
	if v.Explain != nil {
		why = v.Why()
	}
	why.Disabled = disabled
	asked := v.Audit.Asked
	if asked == nil {
		asked = []string{} // "asked": [], as for a deleted node
	}
	return watchLine{Time: t, Node: v.Node, OK: v.OK(), Asked: asked, Missing: v.Audit.Missing, Stuck: v.Audit.Stuck, Findings: v.Order.Findings,
		Present: v.Row.Present.Map(), Explain: why}
}

// table writes the whole table (redraw) or the header once and a row per
// changed node.
func (x *Watch) table(b *strings.Builder, batch verdict.Batch) {
	for _, c := range batch.Changes {
		if c.After == nil {
			delete(x.nodes, c.Node())
		} else {
			x.nodes[c.Node()] = c.After
		}
	}
	t := table{header: []string{"NODE", "STATUS"}}
	for _, o := range batch.Roster {
		t.header = append(t.header, strings.ToUpper(o.Column))
	}
	t.header = append(t.header, "ORDER")
	if x.redraw {
		names := slices.SortedFunc(maps.Keys(x.nodes), judge.NaturalCompare)
		findings := 0
		for _, n := range names {
			t.rows = append(t.rows, watchRow(x.nodes[n], n, batch.Roster))
			if !x.nodes[n].OK() {
				findings++
			}
		}
		b.WriteString("\x1b[H\x1b[2J") // cursor home, clear screen
		t.writeAligned(b, x.p.Color, t.widths(nil), true)
		fmt.Fprintf(b, "\n%s, %d with findings; updated %s\n", nodeCount(len(names)), findings, batch.Time.Format(time.TimeOnly))
		return
	}
	for _, c := range batch.Changes {
		t.rows = append(t.rows, watchRow(c.After, c.Node(), batch.Roster))
	}
	x.widths = t.widths(x.widths)
	t.writeAligned(b, x.p.Color, x.widths, batch.Initial)
}

// watchRow is a node's row: each operand yes, no, or MISSING (asked for and
// not running); a node gone has only its status.
func watchRow(v *verdict.Verdict, node string, roster []operand.Operand) []cell {
	if v == nil {
		row := []cell{{text: node}, {Deleted, faint}}
		for range roster {
			row = append(row, cell{text: "-"})
		}
		return append(row, cell{text: "-"})
	}
	status := cell{"OK", green}
	if !v.OK() {
		status = cell{"FINDING", red}
	}
	row := []cell{{text: node}, status}
	for _, o := range roster {
		switch {
		case slices.Contains(v.Audit.Missing, o.Name):
			row = append(row, cell{"MISSING", red})
		case v.Row.Present.Has(o.Column):
			row = append(row, cell{"yes", green})
		default:
			row = append(row, cell{"no", faint})
		}
	}
	order := cell{"ok", green}
	if !v.Order.OK() {
		order = cell{strings.Join(v.Order.Findings, ","), red}
	}
	return append(row, order)
}
