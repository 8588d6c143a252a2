// Package discover takes a cluster's operands from its live DaemonSets: a
// DaemonSet whose nodeSelector (or required node affinity) has a key
// nvidia.com/gpu.deploy.<name> runs the operand <name>. That finds what the
// lab's five leave out (operator-validator, dcgm, mig-manager,
// node-status-exporter, sandbox and vGPU operands) and every DaemonSet of one
// operand: precompiled drivers (nvidia-driver-daemonset-<kernel>-<os>, one per
// kernel) and drivers made from NVIDIADriver resources
// (nvidia-<type>-driver-<os>-<hash>, one per node pool). For picks the
// roster to judge with (Picked): those operands on a GPU Operator install,
// the lab's five elsewhere, less what the ClusterPolicy switches off. It is
// pure: the DaemonSets and the ClusterPolicy come from the snapshot.
package discover

import (
	"slices"
	"sort"
	"strings"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Roster returns the lab's five operands, always (so that a missing one is
// reported, not forgotten), then every other operand the DaemonSets run:
// known ones in the operator's start-up order, unknown ones by name. Each
// operand keeps its usual DaemonSet name; other live DaemonSets that run it
// become its variants.
func Roster(dss []snapshot.DaemonSet) []operand.Operand {
	live := runBy(dss)
	var out []operand.Operand
	columns := map[string]bool{}
	add := func(o operand.Operand) {
		o.Variants = nil
		for _, d := range live[o.Name] {
			if d != o.DaemonSet {
				o.Variants = append(o.Variants, d)
			}
		}
		columns[o.Column] = true
		out = append(out, o)
		delete(live, o.Name)
	}
	for i, o := range operand.Real {
		if i < len(operand.Lab) || len(live[o.Name]) > 0 {
			add(o)
		}
	}
	rest := make([]string, 0, len(live))
	for name := range live {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		column := name
		if columns[column] {
			column = operand.LabelPrefix + name // a name that is another operand's column
		}
		add(operand.Operand{Name: name, DaemonSet: live[name][0], Column: column})
	}
	return out
}

// runBy maps each operand name to the DaemonSets that select on its deploy
// label, sorted, leaving out the known helpers and the keys that are labels
// only (a GPU client selecting on deploy.client is no operand).
func runBy(dss []snapshot.DaemonSet) map[string][]string {
	out := map[string][]string{}
	for _, d := range dss {
		if slices.Contains(operand.Helpers, d.Name) {
			continue
		}
		for _, name := range operandKeys(d) {
			if !slices.Contains(out[name], d.Name) {
				out[name] = append(out[name], d.Name)
			}
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// operandKeys lists the operand names in a DaemonSet's deploy-label keys.
func operandKeys(d snapshot.DaemonSet) []string {
	var names []string
	for _, k := range d.SelectorLabels() {
		name, ok := strings.CutPrefix(k, operand.LabelPrefix)
		if ok && name != "" && !slices.Contains(operand.LabelOnly, name) {
			names = append(names, name)
		}
	}
	return names
}
