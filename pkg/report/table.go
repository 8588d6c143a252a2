package report

import (
	"io"
	"strings"
	"unicode/utf8"
)

// SGR colour codes of the table cells.
const (
	plain = ""
	green = "\x1b[32m"
	red   = "\x1b[31m"
	faint = "\x1b[2m"
	reset = "\x1b[0m"
)

type cell struct {
	text  string
	color string
}

// table aligns columns the way kubectl does (three spaces between columns).
// It pads by itself rather than with text/tabwriter, which would count the
// colour codes as width and misalign coloured columns.
type table struct {
	header []string
	rows   [][]cell
}

const gap = 3

// block is a part of a view as a table format prints it: a table, or lines
// beside the tables (matrix's pod count, summary's total), which
// --no-headers leaves out as it leaves out the header.
type block struct {
	table *table
	lines []string
}

// shown are the blocks the printer prints: without the lines beside the
// tables under --no-headers.
func (p Printer) shown(blocks []block) []block {
	if !p.NoHeaders {
		return blocks
	}
	var out []block
	for _, b := range blocks {
		if b.table != nil {
			out = append(out, b)
		}
	}
	return out
}

// tables writes one cluster's blocks, a blank line between two.
func (p Printer) tables(w io.Writer, blocks []block) error {
	var b strings.Builder
	for i, bl := range p.shown(blocks) {
		if i > 0 {
			b.WriteString("\n")
		}
		if bl.table != nil {
			bl.table.write(&b, p.Color, !p.NoHeaders)
			continue
		}
		for _, l := range bl.lines {
			b.WriteString(l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// write writes the table, with its header or, as kubectl --no-headers,
// without it: then the columns are only as wide as their cells.
func (t table) write(b *strings.Builder, color, header bool) {
	cols := t
	if !header {
		cols.header = make([]string, len(t.header))
	}
	t.writeAligned(b, color, cols.widths(nil), header)
}

// widths are the columns' widths: the widest cell of each, at least atLeast.
func (t table) widths(atLeast []int) []int {
	widths := make([]int, len(t.header))
	for i, h := range t.header {
		widths[i] = utf8.RuneCountInString(h)
		if i < len(atLeast) {
			widths[i] = max(widths[i], atLeast[i])
		}
	}
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	return widths
}

// writeAligned writes the rows, and the header if asked, in columns of the
// given widths.
func (t table) writeAligned(b *strings.Builder, color bool, widths []int, header bool) {
	line := func(cells []cell) {
		var l strings.Builder
		for i, c := range cells {
			if color && c.color != plain {
				l.WriteString(c.color + c.text + reset)
			} else {
				l.WriteString(c.text)
			}
			l.WriteString(strings.Repeat(" ", max(widths[i]-utf8.RuneCountInString(c.text), 0)+gap))
		}
		// An empty last cell would leave padding at the end of the line.
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	if header {
		head := make([]cell, len(t.header))
		for i, h := range t.header {
			head[i] = cell{text: h}
		}
		line(head)
	}
	for _, r := range t.rows {
		line(r)
	}
}
