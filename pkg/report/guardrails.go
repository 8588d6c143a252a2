package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
)

// Plan prints what an opt-out or opt-in will do: each step's labels node by
// node, the predicted desired counts, and the rules it would break.
func (p Printer) Plan(w io.Writer, pl *plan.Plan) error {
	if p.Format.Data() {
		return p.data(w, pl)
	}
	var b strings.Builder
	for i, s := range pl.Steps {
		fmt.Fprintf(&b, "step %d of %d: %s -> %s\n", i+1, len(pl.Steps), strings.Join(s.Operands, ", "), s.Value)
		for _, n := range s.Nodes {
			fmt.Fprintf(&b, "  node/%s", n.Node)
			for _, o := range s.Operands {
				if v, ok := n.Labels[operand.LabelPrefix+o]; ok {
					fmt.Fprintf(&b, " %s%s=%s", operand.LabelPrefix, o, v)
				}
			}
			b.WriteByte('\n')
		}
	}
	for _, d := range pl.DaemonSets {
		fmt.Fprintf(&b, "daemonset.apps/%s desiredNumberScheduled %d -> %d (predicted)\n", d.DaemonSet, d.Before, d.After)
	}
	for _, br := range pl.Breaks {
		fmt.Fprintf(&b, "breaks %s on %s\n", br.Rule, br.Node)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Guard prints the state of the guard.
func (p Printer) Guard(w io.Writer, st guard.State) error {
	if p.Format.Data() {
		return p.data(w, st)
	}
	var b strings.Builder
	if st.Installed {
		fmt.Fprintf(&b, "guard: installed, mode %s\n", st.Mode)
		if st.Current {
			b.WriteString("rules: the same as this gpuops's\n")
		} else {
			b.WriteString("rules: not those of this gpuops (gpuops guard install brings them up to date)\n")
		}
		exempt := "none"
		if len(st.Exempt) > 0 {
			exempt = strings.Join(st.Exempt, ", ")
		}
		fmt.Fprintf(&b, "exempt: %s\n", exempt)
		for _, warning := range st.Warnings {
			fmt.Fprintf(&b, "warning: %s\n", warning)
		}
	} else {
		b.WriteString("guard: not installed\n")
	}
	fmt.Fprintf(&b, "nodes breaking a rule now: %d\n", len(st.Breaking))
	for _, n := range st.Breaking {
		fmt.Fprintf(&b, "%s %s\n", n.Node, strings.Join(n.Rules, ","))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
