package workload

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
)

// Capacity is where a cluster's GPUs are: per pool of nodes (the value of
// a node label, GFD's GPU model by default) and per resource a pod asks.
type Capacity struct {
	GroupBy string `json:"groupBy"`
	Pools   []Pool `json:"pools"` // in natural order of their names, summary.NoGroup last
	// Notes say what the read skipped and why.
	Notes []string `json:"notes,omitempty"`
}

// Pool is one pool's GPUs.
type Pool struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"` // its GPU nodes
	// Physical are its GPUs as GFD counts them (nvidia.com/gpu.count),
	// else, on a node without the label, the devices the DRA driver
	// publishes there. Shared and MIG devices are never added to it.
	Physical  int64      `json:"physical"`
	Resources []Resource `json:"resources"` // by name
}

// The kinds of a resource.
const (
	Whole  = "gpu"    // nvidia.com/gpu: whole GPUs (or, under the single strategy, MIG devices; or replicas, unrenamed)
	Shared = "shared" // a renamed shared resource: nvidia.com/gpu.shared
	MIG    = "mig"    // nvidia.com/mig-<profile>, the mixed strategy
	DRA    = "dra"    // the DRA driver's devices (ResourceSlices)
)

// Resource is one resource's devices in a pool. Allocatable is Allocated
// plus Free plus every Stranded: a device no pod holds is either free or
// stranded, never both.
type Resource struct {
	Resource string `json:"resource"` // the name a pod asks, or for DRA the driver's
	Kind     string `json:"kind"`
	Nodes    int    `json:"nodes"` // the nodes that advertise it
	// Advertised: the node's capacity (the devices the DRA driver
	// publishes); Allocatable: what the kubelet hands out (the devices no
	// taint withholds); Unhealthy: the difference.
	Advertised  int64 `json:"advertised"`
	Allocatable int64 `json:"allocatable"`
	Unhealthy   int64 `json:"unhealthy"`
	// Allocated: what the pods that have not ended request on their nodes
	// (the devices in claims' allocations), at most a node's allocatable.
	Allocated int64 `json:"allocated"`
	// Free: allocatable and held by no pod, on nodes that take new GPU work.
	Free int64 `json:"free"`
	// Stranded: allocatable and held by no pod, on nodes that take no new
	// GPU work, by reason (Reasons).
	Stranded map[string]int64 `json:"stranded"`
	// LargestFree is the most free devices of one node: the biggest
	// request that fits somewhere now. LargestFreeNode is that node.
	LargestFree     int64  `json:"largestFree"`
	LargestFreeNode string `json:"largestFreeNode,omitempty"`
}

// StrandedTotal sums Stranded.
func (r Resource) StrandedTotal() int64 {
	var n int64
	for _, v := range r.Stranded {
		n += v
	}
	return n
}

// Why a node's free devices are stranded.
const (
	// Health judges the node unable to run GPU work, for a cause other
	// than some unhealthy devices (gpus-unhealthy, devices-tainted: those
	// lower its count, and its healthy devices are free).
	StrandedUnusable = "unusable"
	// gpuops's quarantine holds it (pkg/quarantine).
	StrandedQuarantined = "quarantined"
	// The driver upgrade controller or k8s-driver-manager holds it.
	StrandedUpgrading = "upgrading"
	// Someone else cordoned it (a person, NVSentinel, kured, an actor the
	// ledger does not know).
	StrandedCordoned = "cordoned"
	// Not cordoned, tainted against new work by an out-of-service actor
	// the ledger knows (NVSentinel, kured). A taint of a person or of an
	// actor it does not know may dedicate the node to the pods that
	// tolerate it: it strands nothing.
	StrandedTainted = "tainted"
)

// Reasons are every reason a device is stranded, in the order a node's is
// decided.
var Reasons = []string{StrandedUnusable, StrandedQuarantined, StrandedUpgrading, StrandedCordoned, StrandedTainted}

// onlyLowersCount are the health causes that leave a node's healthy
// devices usable.
var onlyLowersCount = []string{health.GPUsUnhealthy, health.DevicesTainted}

// Stranding is why a node takes no new GPU work ("" when it does): its
// health, else who took it out of service (the ledger).
func Stranding(n *snapshot.Node, h *health.Node) string {
	if h != nil && h.Judged && !h.Usable {
		causes := h.Also
		if h.Cause != nil {
			causes = append([]health.Cause{*h.Cause}, causes...)
		}
		if slices.ContainsFunc(causes, func(c health.Cause) bool { return !slices.Contains(onlyLowersCount, c.Code) }) {
			return StrandedUnusable
		}
	}
	e := ledger.Of(n)
	switch {
	case e == nil:
		return ""
	case e.Actor == ledger.Gpuops:
		return StrandedQuarantined
	case e.Actor == ledger.UpgradeController || e.Actor == ledger.DriverManager:
		return StrandedUpgrading
	case e.Cordoned:
		return StrandedCordoned
	case e.Actor == ledger.NVSentinel || e.Actor == ledger.Kured:
		return StrandedTainted
	}
	return ""
}

// KindOf is the kind of a device resource name.
func KindOf(resource string) string {
	switch {
	case resource == snapshot.GPUResource:
		return Whole
	case strings.HasPrefix(resource, snapshot.MIGResourcePrefix):
		return MIG
	}
	return Shared
}

// CapacityOf counts the GPUs of the snapshot's nodes, given each node's
// health (by node name; a node without is taken as usable) and the
// workload read: per pool by the groupBy label, per resource.
func CapacityOf(s *snapshot.Snapshot, healthOf map[string]*health.Node, f *snapshot.GPUPods, groupBy string) *Capacity {
	held := map[string]map[string]int64{} // node → resource → requested
	for _, p := range f.Pods {
		if p.Node == "" {
			continue
		}
		for r, n := range p.Requests {
			if held[p.Node] == nil {
				held[p.Node] = map[string]int64{}
			}
			held[p.Node][r] += n
		}
	}
	claimed := f.ClaimedByPool()
	pools := map[string]*poolCount{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		dra := s.DevicePools[n.Name]
		h := healthOf[n.Name]
		if len(n.Devices) == 0 && len(dra) == 0 && (h == nil || !h.Judged) {
			continue // not a GPU node
		}
		name := cmp.Or(n.Labels[groupBy], summary.NoGroup)
		p := pools[name]
		if p == nil {
			p = &poolCount{Pool: Pool{Name: name}, byResource: map[string]*Resource{}}
			pools[name] = p
		}
		p.Nodes++
		stranded := Stranding(n, h)
		var published int64
		for _, dp := range dra {
			withheld := map[string]bool{}
			for _, t := range dp.Tainted {
				withheld[t.Device] = true
			}
			poolStranded := stranded
			if poolStranded == "" && !dp.Complete() {
				poolStranded = StrandedUnusable // the scheduler does not allocate from a pool it does not know whole
			}
			p.add(snapshot.DRADriverName, DRA, n.Name, int64(dp.Devices), int64(dp.Devices-len(withheld)), claimed[dp.Name], poolStranded)
			published += int64(dp.Devices)
		}
		if gfd, err := strconv.ParseInt(n.Labels[operand.GPUCountLabel], 10, 64); err == nil {
			p.Physical += gfd
		} else {
			p.Physical += published
		}
		for r, d := range n.Devices {
			p.add(r, KindOf(r), n.Name, d.Capacity, d.Allocatable, held[n.Name][r], stranded)
		}
	}
	out := &Capacity{GroupBy: groupBy, Pools: []Pool{}}
	for _, p := range pools {
		for _, r := range p.byResource {
			p.Resources = append(p.Resources, *r)
		}
		slices.SortFunc(p.Resources, func(a, b Resource) int { return cmp.Compare(a.Resource, b.Resource) })
		out.Pools = append(out.Pools, p.Pool)
	}
	slices.SortFunc(out.Pools, func(a, b Pool) int {
		if (a.Name == summary.NoGroup) != (b.Name == summary.NoGroup) {
			if a.Name == summary.NoGroup {
				return 1
			}
			return -1
		}
		return judge.NaturalCompare(a.Name, b.Name)
	})
	return out
}

// poolCount is a pool while its nodes are counted.
type poolCount struct {
	Pool
	byResource map[string]*Resource
}

// add counts one node's devices of one resource: advertised, allocatable,
// those its pods hold, and why its free ones are stranded ("" when not).
func (p *poolCount) add(resource, kind, node string, advertised, allocatable, allocated int64, stranded string) {
	if advertised == 0 && allocatable == 0 {
		return // a resource the device plugin registered and offers none of now
	}
	r := p.byResource[resource]
	if r == nil {
		r = &Resource{Resource: resource, Kind: kind, Stranded: map[string]int64{}}
		p.byResource[resource] = r
	}
	r.Nodes++
	r.Advertised += advertised
	r.Allocatable += allocatable
	r.Unhealthy += max(0, advertised-allocatable)
	allocated = min(allocated, allocatable)
	r.Allocated += allocated
	free := allocatable - allocated
	switch {
	case stranded != "":
		if free > 0 {
			r.Stranded[stranded] += free
		}
	default:
		r.Free += free
		if free > r.LargestFree || free == r.LargestFree && free > 0 && judge.NaturalCompare(node, r.LargestFreeNode) < 0 {
			r.LargestFree, r.LargestFreeNode = free, node
		}
	}
}
