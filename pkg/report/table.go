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

// write writes the table, with its header or, as kubectl --no-headers,
// without it: then the columns are only as wide as their cells.
func (t table) write(w io.Writer, color, header bool) error {
	if c, ok := w.(*capture); ok { // one cluster's, aligned with the others' later
		c.table(t, header)
		return nil
	}
	cols := t
	if !header {
		cols.header = make([]string, len(t.header))
	}
	return t.writeAligned(w, color, cols.widths(nil), header)
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
func (t table) writeAligned(w io.Writer, color bool, widths []int, header bool) error {
	var b strings.Builder
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
	_, err := io.WriteString(w, b.String())
	return err
}
