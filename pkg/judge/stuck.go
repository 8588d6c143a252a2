package judge

import (
	"time"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Pause is a helper's pause of one operand on one node.
type Pause struct {
	operand.Pause
	Operand string
	// Since is when the label was last written (zero when unknown), and By
	// the field manager that wrote it: the snapshot's LabelChanges.
	Since time.Time
	By    string
}

// Pauses lists the roster's operands a helper has paused on the node, in
// roster order.
func Pauses(n snapshot.Node, roster []operand.Operand) []Pause {
	var out []Pause
	for _, o := range roster {
		v, _ := o.Label(n.Labels)
		p, _, ok := operand.PauseOf(v)
		if !ok {
			continue
		}
		c := n.LabelChanges[o.LabelKey()]
		out = append(out, Pause{Pause: p, Operand: o.Name, Since: c.Time, By: c.Manager})
	}
	return out
}

// StuckAt reports whether the pause has lasted longer than after at now. A
// pause of unknown age is not stuck: nothing says how long it has lasted;
// with after 0 no pause is.
func (p Pause) StuckAt(now time.Time, after time.Duration) bool {
	return after > 0 && !p.Since.IsZero() && now.Sub(p.Since) > after
}

// Stuck marks on each node's audit the operands a helper paused longer than
// after before now: a pause that lasts is the incident (a driver upgrade or
// MIG change that failed half-way), though no label asks for the operand.
func Stuck(audits []NodeAudit, s *snapshot.Snapshot, roster []operand.Operand, now time.Time, after time.Duration) {
	nodes := make(map[string]*snapshot.Node, len(s.Nodes))
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for i := range audits {
		n := nodes[audits[i].Node]
		if n == nil {
			continue
		}
		for _, p := range Pauses(*n, roster) {
			if p.StuckAt(now, after) {
				audits[i].Stuck = append(audits[i].Stuck, p.Operand)
			}
		}
	}
}
