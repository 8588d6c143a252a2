package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Health statuses of a GPU node, as health prints them.
const (
	Ready    = "READY"
	Unusable = "UNUSABLE"
)

// Health prints whether each GPU node can run GPU work: in text a line per
// GPU node, "<node> READY" or "<node> UNUSABLE <code> <operand>" for each
// root cause, then "blocks a,b" for the operands waiting behind it; with
// why, its message and the pods' evidence, indented. Nodes without a GPU
// are not GPU nodes: only the data formats list them ("judged": false).
// JUnit has a case per GPU node, a failure per unusable one.
func (p Printer) Health(w io.Writer, nodes []verdict.Verdict, why bool) error {
	hs := make([]health.Node, 0, len(nodes))
	for _, v := range nodes {
		if v.Health != nil {
			hs = append(hs, *v.Health)
		}
	}
	switch p.Format {
	case JSON, YAML:
		for i := range hs {
			hs[i].Blocked = nonNil(hs[i].Blocked)
		}
		return p.data(w, struct {
			Nodes []health.Node `json:"nodes"`
		}{hs})
	case JUnit:
		var cases []junitCase
		for _, h := range hs {
			if !h.Judged {
				continue
			}
			c := junitCase{Name: "usable", Classname: h.Node, Time: noTime}
			if !h.Usable {
				c.Failure = &junitFailure{Type: h.Cause.Code, Message: strings.TrimPrefix(healthLines(h, false)[0], h.Node+" "), Text: strings.Join(evidence(h), "\n")}
			}
			cases = append(cases, c)
		}
		return writeJUnit(w, "health", cases)
	case Table:
		t := table{header: []string{"NODE", "STATUS", "CAUSE", "OPERAND", "BLOCKS"}}
		for _, h := range hs {
			switch {
			case !h.Judged:
			case h.Usable:
				t.rows = append(t.rows, []cell{{text: h.Node}, {Ready, green}, {}, {}, {}})
			default:
				for _, c := range causes(h) {
					t.rows = append(t.rows, []cell{{text: h.Node}, {Unusable, red}, {text: c.Code}, {text: c.Operand}, {text: strings.Join(h.Blocked, ",")}})
				}
			}
		}
		return p.table(w, t)
	}
	var b strings.Builder
	for _, h := range hs {
		if h.Judged {
			for _, l := range healthLines(h, why) {
				b.WriteString(l + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
		return []string{h.Node + " " + Ready}
	}
	var out []string
	for i, c := range causes(h) {
		l := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", h.Node, Unusable, c.Code, c.Operand))
		if i == 0 && len(h.Blocked) > 0 {
			l += " blocks " + strings.Join(h.Blocked, ",")
		}
		out = append(out, l)
		if why {
			out = append(out, "  "+c.Message)
		}
	}
	if why {
		for _, e := range h.Evidence {
			out = append(out, "  "+e)
		}
	}
	return out
}

// evidence is the cause's message and the pods' evidence.
func evidence(h health.Node) []string {
	var out []string
	for _, c := range causes(h) {
		out = append(out, c.Message)
	}
	return append(out, h.Evidence...)
}
