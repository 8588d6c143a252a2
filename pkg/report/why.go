package report

import (
	"fmt"
	"io"

	"github.com/gpuops/gpuops/pkg/workload"
)

// Why prints gpuops why: per GPU pod of the target a headline "<ns>/<pod>
// <STATE> <code> <why>" (no code while it runs or waits as asked), then,
// indented, each GPU node that does not take it and why, and the
// scheduler's or the kubelet's own words; per other pod of the target why
// it is no GPU pod. Notes go to notes, in text alone.
func (p Printer) Why(w, notes io.Writer, r *workload.WhyReport) error {
	if p.Format.Data() {
		return p.data(w, r)
	}
	if err := writeNotes(notes, r.Notes); err != nil {
		return err
	}
	var lines []string
	for _, a := range r.Answers {
		lines = append(lines, headline(a))
		for _, n := range a.Nodes {
			for _, why := range n.Reasons {
				lines = append(lines, fmt.Sprintf("  %s %s: %s", n.Node, why.Code, why.Message))
			}
		}
		if a.Said != "" {
			lines = append(lines, "  said: "+a.Said)
		}
	}
	for _, o := range r.Others {
		lines = append(lines, o.Pod+" "+o.Why)
	}
	return writeLines(w, lines)
}

// Pods prints gpuops pods: per cause a line "<code>: <n>" (waiting: the
// pods Pending for less than --stuck-after), then each of its pods'
// headlines, indented; "no GPU pod stuck" when there is none.
func (p Printer) Pods(w, notes io.Writer, r *workload.PodsReport) error {
	if p.Format.Data() {
		return p.data(w, r)
	}
	if err := writeNotes(notes, r.Notes); err != nil {
		return err
	}
	var lines []string
	for i := 0; i < len(r.Pods); {
		code := r.Pods[i].Code
		j := i
		for j < len(r.Pods) && r.Pods[j].Code == code {
			j++
		}
		lines = append(lines, fmt.Sprintf("%s: %d", code, j-i))
		for _, a := range r.Pods[i:j] {
			lines = append(lines, "  "+headline(a))
		}
		i = j
	}
	if len(r.Pods) == 0 {
		lines = append(lines, "no GPU pod stuck")
	}
	return writeLines(w, lines)
}

// headline is an answer's first line: "<ns>/<pod> <STATE> [<code>] <why>".
func headline(a workload.Answer) string {
	head := a.Pod + " " + a.State
	if a.Code != "" {
		head += " " + a.Code
	}
	return head + " " + a.Message
}
