package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Warnings reports the node's labels that say more than "run it here" or
// "do not": the operands label when it switches every operand off (or seems
// to); deploy labels on a node without nvidia.com/gpu.present=true, when a
// ClusterPolicy applies (its labeller removes them from such nodes); and each
// roster operand's deploy label whose value is neither "true" nor "false",
// saying what the operand's DaemonSet will do on the node: a helper's pause
// (who wrote it, when, how far the helper is), a host that provides the
// operand, an empty value (and what the operator's labeller makes of it), or
// a value that does not do what it seems to.
func (x *Explainer) Warnings(node string, roster []operand.Operand) []Warning {
	n := x.nodes[node]
	if n == nil {
		return nil
	}
	var out []Warning
	if v, ok := n.Labels[operand.OperandsLabel]; ok && v != "true" {
		msg := "the node asks for no operand: the operator removes its deploy labels, and operand pods still here are unexpected"
		if v != "false" {
			msg = fmt.Sprintf("label is %s, not 'false': the operator does not switch operands off here", quote(v))
		}
		out = append(out, Warning{Node: node, Code: LabelValue, Label: operand.OperandsLabel, Value: v, Message: msg})
	}
	if w, ok := x.gpuNotPresent(n); ok {
		out = append(out, w)
	}
	pauses := map[string]judge.Pause{}
	for _, p := range judge.Pauses(*n, roster) {
		pauses[p.Operand] = p
	}
	for _, o := range roster {
		v, ok := o.Label(n.Labels)
		if !ok || v == "true" || v == "false" {
			continue
		}
		w := Warning{Node: node, Code: LabelValue, Operand: o.Name, Label: o.LabelKey(), Value: v}
		effect := x.effect(n, o)
		switch p, paused := pauses[o.Name]; {
		case paused:
			x.pause(&w, n, p, effect)
		case v == "pre-installed":
			w.Code = HostProvided
			w.Message = "label is 'pre-installed': the host provides this, so " + effect
		case v == "":
			w.Message = "label is empty, not 'true': " + effect + x.labeller(n, o.Name)
		default:
			w.Message = valueMessage(v, effect)
		}
		out = append(out, w)
	}
	return out
}

// pause fills in a warning about a helper's pause: who paused the operand
// and when, how far the helper is, and whether the pause is stuck.
func (x *Explainer) pause(w *Warning, n *snapshot.Node, p judge.Pause, effect string) {
	w.Code = p.Value
	_, restores, _ := operand.PauseOf(w.Value)
	if v, ok := n.Labels[p.StateLabel]; ok {
		w.Progress = p.StateLabel + "=" + v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "label is %s", quote(w.Value))
	if p.By != "" {
		w.By = p.By
		fmt.Fprintf(&b, ", written by %s", p.By)
		if p.By != p.Manager {
			fmt.Fprintf(&b, " (not %s, which writes this value)", p.Manager)
		}
	}
	if !p.Since.IsZero() {
		since := p.Since
		w.Since = &since
		fmt.Fprintf(&b, " %s ago", x.clock.Now.Sub(since).Round(time.Second))
		if w.Stuck = p.StuckAt(x.clock.Now, x.clock.StuckAfter); w.Stuck {
			fmt.Fprintf(&b, ", longer than --stuck-after %s", x.clock.StuckAfter)
		}
	}
	fmt.Fprintf(&b, ": %s paused this operand %s, so %s", p.Helper, p.While, effect)
	if w.Progress != "" {
		fmt.Fprintf(&b, "; %s", w.Progress)
	}
	fmt.Fprintf(&b, "; the label goes back to %s when it is done", quote(restores))
	w.Message = b.String()
}

// gpuNotPresent warns of deploy labels on a node without
// nvidia.com/gpu.present=true, where a ClusterPolicy applies: its labeller
// removes them from such a node, so someone set them by hand or the
// operator is not labelling the node.
func (x *Explainer) gpuNotPresent(n *snapshot.Node) (Warning, bool) {
	present, ok := n.Labels[operand.GPUPresent]
	if x.s.Policy == nil || present == "true" {
		return Warning{}, false
	}
	var keys []string
	for k := range n.Labels {
		if operand.IsDeployLabel(k) && k != operand.OperandsLabel {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return Warning{}, false
	}
	sort.Strings(keys)
	has := "no label " + operand.GPUPresent
	if ok {
		has = operand.GPUPresent + "=" + quote(present)
	}
	return Warning{Node: n.Name, Code: GPUNotPresent, Label: operand.GPUPresent, Value: present, Message: fmt.Sprintf(
		"deploy labels (%s) on a node with %s: the operator removes them from nodes without a GPU, so they were set by hand or the operator is not labelling this node",
		strings.Join(keys, ", "), has)}, true
}

// labeller says, as a parenthesis, what the operator's node labeller does
// with the operand's empty deploy label on the node: it removes every deploy
// label where operands are off or, under a ClusterPolicy, no GPU is present
// (as gpuNotPresent warns); elsewhere it sets the keys of the node's
// workload config to "true" (releases before v26.7 keep an empty one) and
// removes the others' (operand.Release.EmptyLabel).
// It says nothing where the catalog cannot tell.
func (x *Explainer) labeller(n *snapshot.Node, name string) string {
	p := x.s.Policy
	switch {
	case n.Labels[operand.OperandsLabel] == "false":
		return fmt.Sprintf(" (the operator removes it: the node has %s=false)", operand.OperandsLabel)
	case p != nil && n.Labels[operand.GPUPresent] != "true":
		return fmt.Sprintf(" (the operator removes it: the node has no %s=true)", operand.GPUPresent)
	}
	// Without a ClusterPolicy the node's own label is all there is to go by.
	sandbox, mode := true, ""
	if p != nil {
		sandbox, mode = p.Enabled["sandboxWorkloads"], p.SandboxMode
	}
	config := operand.WorkloadConfigOf(n.Labels, sandbox)
	release, _ := x.s.Release() // the pipeline says the note
	switch release.EmptyLabel(config, mode, name) {
	case operand.SetsTrue:
		return " (the operator takes an empty value for unset and will set it to 'true')"
	case operand.Keeps:
		return fmt.Sprintf(" (GPU Operator %s keeps an empty value: it sets only an absent label, so set it to 'true' or remove it)", release.Version)
	case operand.Removes:
		return fmt.Sprintf(" (the operator removes it: %s is not an operand of the node's workload config, %s)", name, config)
	}
	return ""
}

// valueMessage says what a deploy label value other than "" means and what
// it does.
func valueMessage(v, effect string) string {
	if strings.EqualFold(v, "false") {
		return fmt.Sprintf("label is %s, not 'false': %s", quote(v), effect)
	}
	return fmt.Sprintf("label is %s, not 'true': %s", quote(v), effect)
}

// effect says whether the operand's DaemonSets place a pod on the node.
func (x *Explainer) effect(n *snapshot.Node, o operand.Operand) string {
	found := false
	for _, name := range o.DaemonSets() {
		d := x.dss[name]
		if d == nil {
			continue
		}
		found = true
		if _, ok := admits(d, n); ok {
			return fmt.Sprintf("the DaemonSet %s will still run here", d.Name)
		}
	}
	if !found {
		return "a DaemonSet that selects 'true' will not run here"
	}
	return "the DaemonSet will not run here"
}

// Unexpected reports the operand pods running on a node whose operands label
// is "false": the node asks for none.
func (x *Explainer) Unexpected(node string, roster []operand.Operand) []Unexpected {
	n := x.nodes[node]
	if n == nil || n.Labels[operand.OperandsLabel] != "false" {
		return nil
	}
	var out []Unexpected
	for _, o := range roster {
		for _, ds := range o.DaemonSets() {
			for _, p := range x.pods[placement{ds, node}] {
				if p.Present() && p.Node == node {
					out = append(out, Unexpected{Node: node, Operand: o.Name, Pod: p.Name,
						Message: fmt.Sprintf("pod %s is Running although the node has %s=false", p.Name, operand.OperandsLabel)})
				}
			}
		}
	}
	return out
}

func quote(v string) string { return "'" + v + "'" }
