package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/workload"
)

// Capacity prints gpuops capacity: per pool a line "<pool> nodes=N
// physical=N", then per resource an indented line of its counts, the
// stranded ones by reason, and the largest free block with its node.
// Notes go to notes, in text alone (the data formats carry them).
func (p Printer) Capacity(w, notes io.Writer, c *workload.Capacity) error {
	if p.Format.Data() {
		return p.data(w, c)
	}
	if err := writeNotes(notes, c.Notes); err != nil {
		return err
	}
	return writeLines(w, capacityLines(c, ""))
}

// capacityLines are the capacity's text, each line after indent: gpuops
// capacity's, and the block of summary and report --html.
func capacityLines(c *workload.Capacity, indent string) []string {
	var lines []string
	for _, pool := range c.Pools {
		lines = append(lines, fmt.Sprintf("%s%s nodes=%d physical=%d", indent, pool.Name, pool.Nodes, pool.Physical))
		for _, r := range pool.Resources {
			line := fmt.Sprintf("%s  %s (%s) nodes=%d advertised=%d allocatable=%d allocated=%d free=%d unhealthy=%d stranded=%d",
				indent, r.Resource, r.Kind, r.Nodes, r.Advertised, r.Allocatable, r.Allocated, r.Free, r.Unhealthy, r.StrandedTotal())
			var by []string
			for _, reason := range workload.Reasons {
				if n := r.Stranded[reason]; n > 0 {
					by = append(by, fmt.Sprintf("%s=%d", reason, n))
				}
			}
			if len(by) > 0 {
				line += " (" + strings.Join(by, " ") + ")"
			}
			line += fmt.Sprintf(" largest-free=%d", r.LargestFree)
			if r.LargestFree > 0 {
				line += " on " + r.LargestFreeNode
			}
			lines = append(lines, line)
		}
	}
	if len(c.Pools) == 0 {
		lines = append(lines, indent+"no GPU node")
	}
	return lines
}
