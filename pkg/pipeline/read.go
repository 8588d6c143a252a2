package pipeline

import (
	"cmp"
	"context"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/words"
	"github.com/gpuops/gpuops/pkg/workload"
)

// Run reads the snapshot the options need, in one LIST per kind, and
// judges it as of now.
func Run(ctx context.Context, c kubernetes.Interface, o Options) (*outcome.Result, error) {
	var s *snapshot.Snapshot
	var gpuPods *snapshot.GPUPods
	var podsErr, podsNote error
	var g errgroup.Group
	ro := o.ReadOptions()
	if o.Capacity && o.Health && !o.LabelsOnly {
		g.Go(func() (err error) {
			gpuPods, podsErr = read.GPUPods(ctx, c, read.WorkloadOptions{NoRejected: ro.Kubelet})
			if apierrors.IsForbidden(podsErr) { // a right the fleet view can do without
				podsNote, podsErr = podsErr, nil
			}
			return nil
		})
	}
	s, err := read.Snapshot(ctx, c, o.Namespace, ro)
	_ = g.Wait()
	// The snapshot's error first: a cluster that cannot be read says so
	// as the judges without the capacity say it.
	if err = cmp.Or(err, podsErr); err != nil {
		return nil, err
	}
	judge.SortNodes(s) // once, for every judge of it (judge.SortedNodes)
	sc, now := Decide(s, o), o.now()
	r, err := sc.Judge(s, now)
	if err == nil && o.Logs && o.Health {
		r, err = readHints(ctx, c, s, sc, r, now)
	}
	switch {
	case err != nil:
	case podsNote != nil:
		r.Notes = append(r.Notes, "no GPU capacity: "+words.ErrorLine(podsNote))
	case gpuPods != nil:
		if ro.Kubelet { // the Failed pods, listed once for both
			gpuPods.UseRejected(s.Rejected)
		}
		r.Capacity = (&workload.Inputs{Snapshot: s, Health: healthOf(r), Pods: gpuPods}).Capacity(o.GroupBy)
		r.Capacity.Notes = gpuPods.Notes
	}
	return r, err
}

// healthOf is each judged node's health, by node name.
func healthOf(r *outcome.Result) map[string]*health.Node {
	out := map[string]*health.Node{}
	for i := range r.Nodes {
		if h := r.Nodes[i].Health; h != nil {
			out[r.Nodes[i].Node] = h
		}
	}
	return out
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
