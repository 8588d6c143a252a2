package explain

import (
	"fmt"
	"strings"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Warnings reports the node's deploy labels whose value is neither "true"
// nor "false", saying what the operand's DaemonSet will do on the node, and
// the operands label when it switches every operand off (or seems to).
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
		out = append(out, Warning{Node: node, Label: operand.OperandsLabel, Value: v, Message: msg})
	}
	for _, o := range roster {
		v, ok := n.Labels[o.LabelKey()]
		if !ok || v == "true" || v == "false" {
			continue
		}
		out = append(out, Warning{Node: node, Label: o.LabelKey(), Value: v, Message: valueMessage(v, x.effect(n, o))})
	}
	return out
}

// valueMessage says what a deploy label value means and what it does.
func valueMessage(v, effect string) string {
	switch {
	case v == "":
		return "label is empty, not 'true': " + effect + " (the operator takes an empty value for unset and will set it to 'true')"
	case v == "pre-installed":
		return "label is 'pre-installed': the host provides this, so " + effect
	case v == "paused-for-driver-upgrade":
		return "label is 'paused-for-driver-upgrade': a driver upgrade paused this operand, so " + effect + " until the label is 'true' again"
	case strings.EqualFold(v, "false"):
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
