package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/signature"
)

// Health statuses of a GPU node, as health prints them.
const (
	Ready    = "READY"
	Unusable = "UNUSABLE"
)

// healthView is whether each GPU node can run GPU work: in text one line
// per GPU node, "<node> READY" or "<node> UNUSABLE <code> <operand>" for its
// root cause, then "blocks a,b" for the operands waiting behind it;
// explained, its message, the other root causes ("also") and the pods'
// evidence, indented. A usable node's notes (a check's artefact, not its
// fault) follow READY as "note <code> <operand>", explained with their
// message. A second cause is never a second verdict line. Nodes without a
// GPU are not GPU nodes: only the data formats list them ("judged": false).
// JUnit has a case per GPU node, a failure per unusable one.
type healthView struct{ r *outcome.Result }

// nodes are the health of each node judged.
func (h healthView) nodes() []health.Node {
	out := make([]health.Node, 0, len(h.r.Nodes))
	for _, v := range h.r.Nodes {
		if v.Health != nil {
			out = append(out, *v.Health)
		}
	}
	return out
}

func (h healthView) lines() []string {
	var out []string
	for _, n := range h.nodes() {
		if n.Judged {
			out = append(out, healthLines(n, h.r.Explain)...)
		}
	}
	return out
}

// blocks are one table, a row per GPU node; with a column OUT-OF-SERVICE,
// who took the node out of service (the ledger's actor), when some node is
// (as audit's STUCK: the usual table stays as it was).
func (h healthView) blocks(bool) []block {
	nodes := slices.DeleteFunc(h.nodes(), func(n health.Node) bool { return !n.Judged })
	t := table{header: []string{"NODE", "STATUS", "CAUSE", "OPERAND", "BLOCKS"}}
	out := slices.ContainsFunc(nodes, func(n health.Node) bool { return n.OutOfService != nil })
	if out {
		t.header = append(t.header, "OUT-OF-SERVICE")
	}
	for _, n := range nodes {
		row := []cell{{text: n.Node}, {Ready, green}, {}, {}, {}}
		if !n.Usable {
			row = []cell{{text: n.Node}, {Unusable, red}, {text: n.Cause.Code}, {text: n.Cause.Operand}, {text: strings.Join(n.Blocked, ",")}}
		}
		if out {
			var by cell
			if e := n.OutOfService; e != nil {
				by.text = e.Actor
			}
			row = append(row, by)
		}
		t.rows = append(t.rows, row)
	}
	return []block{{table: &t}}
}

func (h healthView) data(o *Origin) any {
	hs := h.nodes()
	for i := range hs {
		hs[i].Blocked = nonNil(hs[i].Blocked)
	}
	return struct {
		*Origin
		Operator *outcome.Operator `json:"operator,omitempty"`
		Nodes    []health.Node     `json:"nodes"`
		LogNotes []string          `json:"logNotes,omitempty"` // the logs --logs could not read
	}{o, h.r.Operator, hs, h.r.LogNotes}
}

func (h healthView) cases() []junitCase {
	var out []junitCase
	for _, n := range h.nodes() {
		if !n.Judged {
			continue
		}
		c := junitCase{Name: "usable", Classname: n.Node, Time: noTime}
		if !n.Usable {
			c.Failure = &junitFailure{Type: n.Cause.Code, Message: strings.TrimPrefix(healthLines(n, false)[0], n.Node+" "), Text: strings.Join(evidence(n), "\n")}
		}
		out = append(out, c)
	}
	return out
}

// causes are the node's root causes, the first one first.
func causes(h health.Node) []health.Cause {
	if h.Cause == nil {
		return nil
	}
	return append([]health.Cause{*h.Cause}, h.Also...)
}

// healthLines are the text lines of one GPU node.
func healthLines(h health.Node, why bool) []string {
	if h.Usable {
		l := h.Node + " " + Ready
		for _, c := range h.Notes {
			l += " note " + strings.TrimSpace(c.Code+" "+c.Operand)
		}
		out := []string{l}
		if why {
			for _, c := range h.Notes {
				out = append(out, "  "+c.Message)
			}
		}
		return append(out, outOfService(h, why)...)
	}
	l := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", h.Node, Unusable, h.Cause.Code, h.Cause.Operand))
	if len(h.Blocked) > 0 {
		l += " blocks " + strings.Join(h.Blocked, ",")
	}
	if codes := hintCodes(h); len(codes) > 0 {
		l += " hint " + strings.Join(codes, ",")
	}
	out := []string{l}
	if !why {
		return out
	}
	out = append(out, "  "+h.Cause.Message)
	for _, c := range h.Also {
		out = append(out, "  also "+strings.TrimSpace(c.Code+" "+c.Operand)+": "+c.Message)
	}
	for _, e := range h.Evidence {
		out = append(out, "  "+e)
	}
	for _, x := range h.Hints {
		out = append(out, fmt.Sprintf("  hint %s: %s", x.Code, hintSource(x)),
			"    cause: "+x.Cause, "    remedy: "+x.Remedy)
	}
	return append(out, outOfService(h, why)...)
}

// hintCodes are the codes of the node's hints, each once, in the order
// found.
func hintCodes(h health.Node) []string {
	var out []string
	for _, x := range h.Hints {
		if !slices.Contains(out, x.Code) {
			out = append(out, x.Code)
		}
	}
	return out
}

// hintSource says what showed a hint, and its line: a container's log
// (the instance before, for a crash loop), its termination message, or a
// Warning Event on the pod.
func hintSource(x signature.Hint) string {
	switch x.From {
	case signature.FromMessage:
		return fmt.Sprintf("container %s of pod %s terminated with message %q", x.Container, x.Pod, x.Line)
	case signature.FromEvent:
		return fmt.Sprintf("a Warning Event on pod %s said %q", x.Pod, x.Line)
	}
	s := fmt.Sprintf("container %s of pod %s", x.Container, x.Pod)
	if x.Previous {
		s += " (its previous instance)"
	}
	return fmt.Sprintf("%s logged %q", s, x.Line)
}

// outOfService is, explained, the line that says who took the node out of
// service (the ledger's entry).
func outOfService(h health.Node, why bool) []string {
	if !why || h.OutOfService == nil {
		return nil
	}
	return []string{"  out of service: " + h.OutOfService.String()}
}

// evidence is the cause's message and the pods' evidence.
func evidence(h health.Node) []string {
	var out []string
	for _, c := range causes(h) {
		out = append(out, c.Message)
	}
	return append(out, h.Evidence...)
}
