package pipeline

import (
	"context"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/workload"
)

// workloads is the workload side of a cluster read once: the nodes and
// their health as the options judge them, and the GPU pods of every
// namespace.
type workloads struct {
	s      *snapshot.Snapshot
	health map[string]*health.Node
	fleet  *workload.Fleet
	notes  []string
}

// readWorkloads reads the nodes (judged for health as o says; with every
// label when allLabels, as the scheduler matches selectors on any) and
// the GPU pods side by side, with more beside them when more is set, and
// judges each node's health as of now.
func readWorkloads(ctx context.Context, c kubernetes.Interface, o Options, allLabels bool, more func() error) (*workloads, error) {
	o.Health = true
	ro := o.ReadOptions()
	if allLabels {
		ro.NodeLabels = nil
	}
	w := &workloads{}
	var g errgroup.Group
	g.Go(func() (err error) { w.s, err = read.Snapshot(ctx, c, o.Namespace, ro); return err })
	g.Go(func() (err error) { w.fleet, err = read.GPUPods(ctx, c, read.WorkloadOptions{}); return err })
	if more != nil {
		g.Go(more)
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	judge.SortNodes(w.s)
	sc := Decide(w.s, o)
	hs := health.Assess(w.s, sc.Roster, time.Now(), o.StuckAfter)
	w.health = make(map[string]*health.Node, len(hs))
	for i := range hs {
		w.health[hs[i].Node] = &hs[i]
	}
	w.notes = slices.Concat(sc.Notes, w.fleet.Notes)
	return w, nil
}

// Capacity says where the cluster's GPUs are (gpuops capacity): the nodes
// judged for health as the options say, grouped by o.GroupBy, and the GPU
// pods of every namespace.
func Capacity(ctx context.Context, c kubernetes.Interface, o Options) (*workload.Capacity, error) {
	w, err := readWorkloads(ctx, c, o, false, nil)
	if err != nil {
		return nil, err
	}
	out := workload.CapacityOf(w.s, w.health, w.fleet, o.GroupBy)
	out.Notes = w.notes
	return out, nil
}

