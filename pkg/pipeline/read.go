package pipeline

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// Run reads the snapshot the options need, in one LIST per kind, and
// judges it as of now.
func Run(ctx context.Context, c kubernetes.Interface, o Options) (*outcome.Result, error) {
	s, err := read.Snapshot(ctx, c, o.Namespace, o.ReadOptions())
	if err != nil {
		return nil, err
	}
	judge.SortNodes(s) // once, for every judge of it (judge.SortedNodes)
	sc, now := Decide(s, o), o.now()
	r, err := sc.Judge(s, now)
	if err == nil && o.Logs && o.Health {
		r, err = readHints(ctx, c, s, sc, r, now)
	}
	return r, err
}

// ReadOptions say what the judges of these options read, and no more: a
// node's deploy labels unless the reasons, health (readiness, devices, GFD's
// count) or the grouping label need the rest, the DaemonSets when the roster or the reasons need them, who wrote
// a helper's pause when pauses can be stuck, the DRA driver's devices for health.
func (o Options) ReadOptions() read.Options {
	ro := read.Options{
		NodeSelector:     o.NodeSelector,
		Node:             o.Node,
		DeployLabelsOnly: !o.Explain && o.GroupBy == "" && !o.Health,
		DaemonSets:       !o.LabelsOnly && (o.Explain || o.Roster != LabRoster),
		Operator:         !o.LabelsOnly,
		Offers:           o.Health && !o.LabelsOnly,
		NoPods:           o.LabelsOnly,
		Upgrades:         o.Upgrades,
		DRA:              o.Health,
		Kubelet:          o.Health && !o.LabelsOnly,
	}
	// Of whole nodes, only the labels the verdicts read are decoded.
	ro.NodeLabels = func(dss []snapshot.DaemonSet) func(string) bool { return o.LabelsRead(dss).Keep }
	switch {
	case o.Health:
		ro.Trace = pausedOrUpgrading
	case o.StuckAfter > 0 || o.Explain:
		ro.Trace = operand.Paused
	}
	return ro
}

// pausedOrUpgrading picks the labels whose age health reads: a helper's
// pause, the driver upgrade's state and the MIG manager's while it applies
// a layout (stuck when held too long).
func pausedOrUpgrading(key, value string) bool {
	return operand.Paused(key, value) || operand.UpgradeTraced(key, value) || operand.MIGChanging(key, value)
}
