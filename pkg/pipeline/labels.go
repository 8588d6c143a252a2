package pipeline

import (
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Labels are the node labels the verdicts of these options read, given the
// namespace's DaemonSets: a store that keeps only those (pkg/live) judges as
// a whole read would. A real node carries a hundred-odd labels and the
// judges read about ten, a tenth of the store's heap that all of them
// would take (docs/scale.md, "`serve` all day").
type Labels struct {
	all        bool // every label (Workloads)
	deployOnly bool
	keys       map[string]bool // besides operand.JudgedLabel's
}

// LabelsRead says which node labels the verdicts read: only the deploy
// labels when the read is that narrow (ReadOptions); otherwise the
// catalog's (operand.JudgedLabel), every key a DaemonSet of the namespace
// selects nodes on (the reasons name a mismatch), and GroupBy; every label
// with Workloads.
func (o Options) LabelsRead(daemonSets []snapshot.DaemonSet) Labels {
	if o.Workloads {
		return Labels{all: true}
	}
	if o.ReadOptions().DeployOnly() {
		return Labels{deployOnly: true}
	}
	keys := map[string]bool{}
	for _, d := range daemonSets {
		for _, k := range d.SelectorLabels() {
			keys[k] = true
		}
	}
	if o.GroupBy != "" {
		keys[o.GroupBy] = true
	}
	return Labels{keys: keys}
}

// Keep reports whether the verdicts read the node label of this key.
func (l Labels) Keep(key string) bool {
	if l.all {
		return true
	}
	if l.deployOnly {
		return operand.AskLabel(key)
	}
	return operand.JudgedLabel(key) || l.keys[key]
}

// Covers reports whether l keeps every label m keeps: a store trimmed by l
// can be judged by m's verdicts without reading the nodes again.
func (l Labels) Covers(m Labels) bool {
	if l.all || m.all {
		return l.all
	}
	if !l.deployOnly && m.deployOnly {
		return true
	}
	if l.deployOnly != m.deployOnly {
		return false
	}
	for k := range m.keys {
		if !l.Keep(k) {
			return false
		}
	}
	return true
}
