package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/judge"
)

// WriteAudit prints the audit in the lab's format with the reasons appended
// to each MISSING line in parentheses (so the third field is still the
// operand), followed, node by node, by UNEXPECTED and WARNING lines:
//
//	<node> MISSING <operand> (<reason>; <reason>)
//	<node> UNEXPECTED <operand> (<message>)
//	<node> WARNING <label> (<message>)
func WriteAudit(w io.Writer, audits []judge.NodeAudit, r Report) error {
	missing := map[[2]string][]Reason{}
	for _, m := range r.Missing {
		missing[[2]string{m.Node, m.Operand}] = m.Reasons
	}
	unexpected := map[string][]Unexpected{}
	for _, u := range r.Unexpected {
		unexpected[u.Node] = append(unexpected[u.Node], u)
	}
	warnings := map[string][]Warning{}
	for _, wa := range r.Warnings {
		warnings[wa.Node] = append(warnings[wa.Node], wa)
	}
	var b strings.Builder
	for _, a := range audits {
		if a.OK() {
			fmt.Fprintf(&b, "%s OK\n", a.Node)
		}
		for _, op := range a.Missing {
			fmt.Fprintf(&b, "%s MISSING %s", a.Node, op)
			if rs := missing[[2]string{a.Node, op}]; len(rs) > 0 {
				msgs := make([]string, len(rs))
				for i, r := range rs {
					msgs[i] = r.Message
				}
				fmt.Fprintf(&b, " (%s)", strings.Join(msgs, "; "))
			}
			b.WriteByte('\n')
		}
		for _, u := range unexpected[a.Node] {
			fmt.Fprintf(&b, "%s UNEXPECTED %s (%s)\n", a.Node, u.Operand, u.Message)
		}
		for _, wa := range warnings[a.Node] {
			fmt.Fprintf(&b, "%s WARNING %s (%s)\n", a.Node, wa.Label, wa.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
