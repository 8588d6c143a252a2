package workload

import (
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Inputs are what the workload side is judged from, however they were
// read: by one read of the cluster (gpuops capacity, pods, why, and
// summary's block) or from serve --workloads' stores. Each judge takes its
// part of them here, so that the one-shot commands and serve judge the
// same inputs alike and never disagree.
type Inputs struct {
	// Snapshot holds the nodes and the DRA driver's pools (nil without
	// the DRA stack).
	Snapshot *snapshot.Snapshot
	// Health is each judged node's health, by node name.
	Health map[string]*health.Node
	// Pods are the GPU pods of every namespace, with the claims, classes
	// and refusals at admission read beside them.
	Pods *snapshot.GPUPods
	// Warnings are the pods' Warning Events, by namespace/name; nil when
	// not read (capacity needs none).
	Warnings map[string][]snapshot.Warning
}

// Cluster is what why reads of the inputs besides the pods, judged as of
// now.
func (in *Inputs) Cluster(now time.Time, stuckAfter time.Duration) Cluster {
	return Cluster{Nodes: in.Snapshot.Nodes, Health: in.Health, Pools: in.Snapshot.DevicePools, Warnings: in.Warnings, Now: now, StuckAfter: stuckAfter}
}

// Capacity says where the GPUs are, per pool by the groupBy label
// (CapacityOf).
func (in *Inputs) Capacity(groupBy string) *Capacity {
	return CapacityOf(in.Snapshot, in.Health, in.Pods, groupBy)
}

// PodsOf says why each GPU pod of listed (all when nil) is not running as
// asked, judged as of now (PodsOf).
func (in *Inputs) PodsOf(listed *snapshot.GPUPods, now time.Time, stuckAfter time.Duration) *PodsReport {
	return PodsOf(in.Pods, listed, in.Cluster(now, stuckAfter))
}
