package workload

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Cause codes of a GPU pod that is not running as asked, stable for
// scripts reading the JSON output. The first group is per node (why that
// node does not take the pod); the rest are the pod's own.
const (
	// The node would take the pod but health says it cannot run GPU work
	// (its cause carried).
	NodeUnusable = "node-unusable"
	// Unhealthy GPUs (capacity − allocatable) are what leaves the node
	// short.
	GPUsUnhealthy = "gpus-unhealthy"
	// The node's allocatable GPUs are taken by the pods bound there.
	AllAllocated = "all-allocated"
	// The node is cordoned (spec.unschedulable), by whom the ledger says.
	Cordoned = "cordoned"
	// A taint the pod does not tolerate, key=value:effect.
	UntoleratedTaint = "untolerated-taint"
	// nodeSelector or required node affinity excludes the node.
	SelectorMismatch = "selector-mismatch"
	// The request is larger than the node's GPUs.
	ExceedsNode = "exceeds-node"

	// No node offers the resource the pod asks for.
	ResourceNotOffered = "resource-not-offered"
	// Enough free GPUs in the fleet, on no single node enough.
	Fragmented = "fragmented"
	// What gpuops does not model: the scheduler's message, verbatim.
	Scheduler = "scheduler"
	// Bound, or Running, on a node health calls unusable (for a cause
	// other than some unhealthy GPUs): the pod got a device it cannot use.
	OnUnusableNode = "on-unusable-node"
	// Failed by the kubelet at admission (UnexpectedAdmissionError).
	AdmissionRejected = "admission-rejected"
	// Bound, its sandbox fails: the container runtime has no runtime for
	// the pod's handler (no runtime for "nvidia" is configured): the
	// container toolkit has not configured it.
	RuntimeNotConfigured = "runtime-not-configured"
	// Bound, a container fails in the NVIDIA hook, which cannot reach the
	// driver (nvidia-container-cli: initialization error, load library
	// failed, change root failed).
	DriverNotReady = "driver-not-ready"
	// Bound, the NVIDIA hook refuses a container whose image requires a
	// CUDA version above what the node's driver supports (its legacy
	// mode checks NVIDIA_REQUIRE_CUDA; in CDI mode it does not,
	// NVIDIA/nvidia-container-toolkit#1470).
	CUDADriverTooOld = "cuda-driver-too-old"
	// Bound, the kubelet defers its admission: a device plugin of a
	// resource it asks has not registered (DeviceNotReady).
	DeviceNotReady = "device-not-ready"
	// A DRA claim of the pod asks a device class that does not exist: the
	// scheduler cannot allocate it on any node.
	DeviceClassUnknown = "device-class-unknown"
	// Bound, the DRA kubelet plugin cannot prepare its claims' devices
	// (FailedPrepareDynamicResources).
	PrepareFailed = "prepare-failed"
)

// cudaRequired matches the hook's refusal and the CUDA version required
// ("nvidia-container-cli: requirement error: unsatisfied condition:
// cuda>=11.8, please update your driver to a newer version, or use an
// earlier cuda container", NVIDIA/nvidia-container-toolkit#152; older
// hooks wrote "cuda >= 9.0").
var cudaRequired = regexp.MustCompile(`requirement error: unsatisfied condition: cuda\s*>=\s*([0-9.]+)`)

// driverCUDA are GFD's labels of the CUDA version the node's driver
// supports, major then minor: the current ones, then the deprecated ones
// (NVIDIA/k8s-device-plugin internal/lm/nvml.go).
var driverCUDA = [][2]string{
	{"nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor"},
	{"nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor"},
}

// driverCUDAOf is the CUDA version the node's driver supports, as GFD labels
// it; false when it does not.
func driverCUDAOf(n *snapshot.Node) (string, bool) {
	for _, keys := range driverCUDA {
		if major, ok := n.Labels[keys[0]]; ok {
			return major + "." + cmp.Or(n.Labels[keys[1]], "0"), true
		}
	}
	return "", false
}

// hookFailed matches what the NVIDIA container hook says when it cannot
// reach the driver, as the kubelet quotes it in a container's state
// (NVIDIA/gpu-operator#511, #625: "nvidia-container-cli: initialization
// error: load library failed: libnvidia-ml.so.1: cannot open shared object
// file").
var hookFailed = regexp.MustCompile(`nvidia-container-cli(\.real)?: initialization error|load library failed|change root failed`)

// Codes are every code why and pods give, in the headline's precedence:
// the stack first, then what a person set, then capacity; the scheduler's
// own words last.
var Codes = []string{OnUnusableNode, RuntimeNotConfigured, PrepareFailed, DeviceNotReady, DriverNotReady, CUDADriverTooOld, AdmissionRejected,
	DeviceClassUnknown, NodeUnusable, Cordoned, UntoleratedTaint, SelectorMismatch,
	GPUsUnhealthy, AllAllocated, Fragmented, ExceedsNode, ResourceNotOffered, Scheduler}

// precedence ranks a code by Codes.
func precedence(code string) int { return slices.Index(Codes, code) }

// ByStack reports whether a headline code blames the GPU stack (Codes'
// first group, through node-unusable), not what a person set nor a fleet
// that is merely full: the codes serve's alert on blocked GPU pods fires on.
func ByStack(code string) bool {
	i := precedence(code)
	return i >= 0 && i <= precedence(NodeUnusable)
}

// The states of a GPU pod.
const (
	Running = "Running" // running, bound to a usable node
	Waiting = "Waiting" // Pending for less than stuck-after: not a finding yet
	Pending = "Pending" // Pending for longer
	Stuck   = "Stuck"   // bound or Running where it cannot use its GPUs
	Refused = "Refused" // the kubelet failed it at admission
)

// Answer is why one GPU pod is not running as asked.
type Answer struct {
	Pod   string           `json:"pod"` // namespace/name
	Owner string           `json:"owner,omitempty"`
	Asks  map[string]int64 `json:"asks,omitempty"`
	Node  string           `json:"node,omitempty"`
	State string           `json:"state"`
	// Code is the headline cause ("" when running as asked), Message
	// says it in one line.
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	// Health is the node's health cause the code carries
	// (on-unusable-node).
	Health *health.Cause `json:"health,omitempty"`
	// Nodes are, for a pod the scheduler has not placed, every GPU node
	// and why it does not take the pod, in natural name order.
	Nodes []NodeAnswer `json:"nodes,omitempty"`
	// Said is the scheduler's or the kubelet's own message.
	Said string `json:"said,omitempty"`
}

// Finding reports whether the answer is a finding: a pod stuck, not one
// running or still waiting.
func (a *Answer) Finding() bool { return a.State != Running && a.State != Waiting }

// NodeAnswer is why one node does not take the pod.
type NodeAnswer struct {
	Node    string   `json:"node"`
	Reasons []Reason `json:"reasons"`
}

// Reason is one reason a node does not take the pod.
type Reason struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Health  *health.Cause `json:"health,omitempty"`
}

// Cluster is what the why judge reads besides the pods: the nodes, each
// node's health (by node name), the DRA driver's device pools (by node;
// nil without the DRA stack), the Warning Events on the pods (by
// namespace/name; nil when not read), and the clock.
type Cluster struct {
	Nodes      []snapshot.Node
	Health     map[string]*health.Node
	Pools      map[string][]snapshot.DevicePool
	Warnings   map[string][]snapshot.Warning
	Now        time.Time
	StuckAfter time.Duration
	// named are the nodes by name, indexed by Why: a pod's node is looked
	// up for each pod, and a scan of the nodes for each made serve's
	// judgement of the workloads quadratic.
	named map[string]*snapshot.Node
}

// Why says why each of the pods is not running as asked, judged against
// every GPU pod read (those bound hold their GPUs) and the cluster.
func Why(f *snapshot.GPUPods, pods []snapshot.GPUPod, c Cluster) []Answer {
	held := map[string]map[string]int64{}  // node → resource → requested
	holders := map[string]map[string]int{} // node → namespace → pods
	for _, p := range f.Pods {
		if p.Node == "" {
			continue
		}
		if held[p.Node] == nil {
			held[p.Node], holders[p.Node] = map[string]int64{}, map[string]int{}
		}
		for r, n := range p.Requests {
			held[p.Node][r] += n
		}
		holders[p.Node][p.Namespace]++
	}
	// A DRA pod requests nothing: its devices are those allocated to
	// claims from its node's pools.
	claimed := f.ClaimedByPool()
	for node, pools := range c.Pools {
		for _, dp := range pools {
			if claimed[dp.Name] == 0 {
				continue
			}
			if held[node] == nil {
				held[node] = map[string]int64{}
			}
			held[node][snapshot.DRADriverName] += claimed[dp.Name]
		}
	}
	c.named = make(map[string]*snapshot.Node, len(c.Nodes))
	for i := range c.Nodes {
		c.named[c.Nodes[i].Name] = &c.Nodes[i]
	}
	out := make([]Answer, 0, len(pods))
	for i := range pods {
		out = append(out, c.why(f, &pods[i], held, holders))
	}
	return out
}

// WhyRejected is the answer for a pod the kubelet failed at admission,
// with how many such pods pile up on its node.
func WhyRejected(f *snapshot.GPUPods, r snapshot.RejectedPod) Answer {
	n := f.RejectedOn()[r.Node]
	return Answer{Pod: r.Namespace + "/" + r.Name, Node: r.Node, State: Refused, Code: AdmissionRejected,
		Message: fmt.Sprintf("the kubelet of %s failed it at admission (%d such pods there): its device plugin could not allocate what it asked", r.Node, n),
		Said:    snapshot.UnexpectedAdmissionError + ": " + r.Message}
}

func (c Cluster) why(f *snapshot.GPUPods, p *snapshot.GPUPod, held map[string]map[string]int64, holders map[string]map[string]int) Answer {
	a := Answer{Pod: p.Key(), Owner: p.Owner, Asks: p.Requests, Node: p.Node, Said: p.Unscheduled}
	if p.Node != "" {
		a.State = Running
		if p.Phase == corev1.PodPending {
			a.State = Pending
		}
		h := c.Health[p.Node]
		if h != nil && Stranding(c.nodeNamed(p.Node), h) == StrandedUnusable {
			a.State, a.Code, a.Health = Stuck, OnUnusableNode, h.Cause
			a.Message = fmt.Sprintf("bound to %s, which cannot run GPU work: %s", p.Node, causeLine(h.Cause))
			return a
		}
		// A pod that runs made its sandbox since: an old Warning is not its state.
		if runtime, w, ok := snapshot.MissingRuntime(c.Warnings[p.Key()]); ok && p.Phase == corev1.PodPending {
			a.State, a.Code, a.Said = Stuck, RuntimeNotConfigured, w.Reason+": "+w.Message
			a.Message = fmt.Sprintf("bound to %s, whose container runtime has no runtime %q: the container toolkit has not configured it (the node: %s)",
				p.Node, runtime, healthLine(h))
			a.Health = causeOf(h)
			return a
		}
		if w, ok := snapshot.Warned(c.Warnings[p.Key()], snapshot.FailedPrepareDynamicResources); ok && p.Phase == corev1.PodPending {
			a.State, a.Code, a.Said, a.Health = Stuck, PrepareFailed, w.Reason+": "+w.Message, causeOf(h)
			a.Message = fmt.Sprintf("bound to %s, whose DRA kubelet plugin cannot prepare its claims' devices (the node: %s)", p.Node, healthLine(h))
			return a
		}
		if said := deferred(p, c.Warnings[p.Key()]); said != "" && p.Phase == corev1.PodPending {
			a.State, a.Code, a.Said, a.Health = c.pending(p), DeviceNotReady, said, causeOf(h)
			if a.State == Pending {
				a.State = Stuck
			}
			a.Message = fmt.Sprintf("bound to %s, whose kubelet defers its admission: the device plugin of what it asks has not registered (the node: %s)", p.Node, healthLine(h))
			return a
		}
		if m := cudaRequired.FindStringSubmatch(p.NotStarted); m != nil {
			supports := "GFD does not label the CUDA version its driver supports"
			if v, ok := driverCUDAOf(c.nodeNamed(p.Node)); ok {
				supports = "its driver supports CUDA " + v + " (GFD's labels)"
			}
			a.State, a.Code, a.Said = Stuck, CUDADriverTooOld, p.NotStarted
			a.Message = fmt.Sprintf("bound to %s; its image requires CUDA >= %s, %s", p.Node, m[1], supports)
			return a
		}
		if hookFailed.MatchString(p.NotStarted) {
			a.State, a.Code, a.Said = Stuck, DriverNotReady, p.NotStarted
			a.Message = fmt.Sprintf("bound to %s, where the NVIDIA container hook cannot reach the driver (the node: %s)", p.Node, healthLine(h))
			a.Health = causeOf(h)
			return a
		}
		if a.State == Running {
			// The headline reads "<pod> Running on <node>": the state is the verb.
			a.Message = "on " + p.Node
		} else {
			a.State, a.Message = Waiting, "bound to "+p.Node+", starting"
		}
		return a
	}
	a.State = c.pending(p)
	asks := p.Requests
	if len(asks) == 0 { // a DRA pod: its devices come from its claims
		n, unknown := claimAsks(f, p)
		switch {
		case unknown != "":
			a.Code, a.Message = DeviceClassUnknown, unknown
			return a
		case n == 0: // a claim not made or not read yet: what it asks is not known
			a.Code, a.Message = Scheduler, cmp.Or(p.Unscheduled, "not scheduled yet")
			return a
		}
		asks = map[string]int64{snapshot.DRADriverName: n}
	}
	offered := false
	fits := 0
	var free int64 // over the nodes that take the pod but for capacity
	for i := range c.Nodes {
		n := &c.Nodes[i]
		reasons, ok := c.nodeReasons(p, asks, n, held[n.Name], holders[n.Name])
		if ok {
			offered = true
		}
		if !ok {
			continue
		}
		if len(reasons) == 0 {
			fits++
			continue
		}
		if len(reasons) == 1 && reasons[0].Code == AllAllocated {
			free += c.freeOf(asks, n, held[n.Name])
		}
		a.Nodes = append(a.Nodes, NodeAnswer{Node: n.Name, Reasons: reasons})
	}
	slices.SortFunc(a.Nodes, func(x, y NodeAnswer) int { return judge.NaturalCompare(x.Node, y.Node) })
	switch {
	case !offered:
		a.Code, a.Message = ResourceNotOffered, c.notOffered(asks)
	case fits > 0:
		// gpuops finds a node that fits: the scheduler said no for a
		// reason gpuops does not model, or has not tried yet.
		a.Code = Scheduler
		a.Message = fmt.Sprintf("%d GPU node(s) would take it as gpuops reads them: %s", fits, cmp.Or(p.Unscheduled, "the scheduler has not placed it yet"))
	default:
		a.Code, a.Message = headline(a.Nodes)
		if a.Code == AllAllocated && free >= total(asks) && len(asks) == 1 {
			a.Code = Fragmented
			a.Message = fmt.Sprintf("%d free GPU(s) on the nodes that would take it, not %d on any one", free, total(asks))
		}
	}
	return a
}

// headline is the most actionable code among the nodes' reasons: of the
// nodes that would take the pod but for one reason, the one first in
// Codes; with no such node, the first of every reason.
func headline(nodes []NodeAnswer) (string, string) {
	best, msg := "", ""
	pick := func(only bool) {
		for _, n := range nodes {
			if only && len(n.Reasons) != 1 {
				continue
			}
			for _, r := range n.Reasons {
				if best == "" || precedence(r.Code) < precedence(best) {
					best, msg = r.Code, n.Node+": "+r.Message
				}
			}
		}
	}
	if pick(true); best == "" {
		pick(false)
	}
	count := 0
	for _, n := range nodes {
		if slices.ContainsFunc(n.Reasons, func(r Reason) bool { return r.Code == best }) {
			count++
		}
	}
	if count > 1 {
		msg = fmt.Sprintf("%s (and %d more node(s))", msg, count-1)
	}
	return best, msg
}

// nodeReasons are why the node does not take the pod asking asks, none
// when it would; false when it is no GPU node or offers none of what the
// pod asks. A node whose DRA devices health says are not all published
// offers them: that it cannot take the pod is its health's doing.
func (c Cluster) nodeReasons(p *snapshot.GPUPod, asks map[string]int64, n *snapshot.Node, held map[string]int64, holders map[string]int) ([]Reason, bool) {
	var out []Reason
	h := c.Health[n.Name]
	for _, r := range slices.Sorted(maps.Keys(asks)) {
		want := asks[r]
		d := c.devices(n, r)
		if d.Capacity == 0 && d.Allocatable == 0 {
			if r == snapshot.DRADriverName && (healthCause(h, health.DevicesNotPublished) != nil || healthCause(h, health.PoolIncomplete) != nil) {
				continue
			}
			return nil, false
		}
		free := d.Allocatable - held[r]
		switch {
		case want > d.Capacity:
			out = append(out, Reason{Code: ExceedsNode, Message: fmt.Sprintf("asks %d %s, the node has %d", want, r, d.Capacity)})
		case want > free && want <= d.Capacity-held[r] && r == snapshot.DRADriverName:
			// The scheduler allocates no device tainted NoSchedule or
			// NoExecute: health's devices-tainted is what leaves it short.
			out = append(out, Reason{Code: NodeUnusable, Health: healthCause(h, health.DevicesTainted),
				Message: fmt.Sprintf("%d of its %d %s devices tainted against new claims (%d held): %d free, asks %d",
					d.Capacity-d.Allocatable, d.Capacity, r, held[r], max(0, free), want)})
		case want > free && want <= d.Capacity-held[r]:
			out = append(out, Reason{Code: GPUsUnhealthy, Message: fmt.Sprintf("%d of its %d %s unhealthy (allocatable %d, %d held): %d free, asks %d",
				d.Capacity-d.Allocatable, d.Capacity, r, d.Allocatable, held[r], max(0, free), want)})
		case want > free:
			out = append(out, Reason{Code: AllAllocated, Message: fmt.Sprintf("%d of its %d %s held by %s: %d free, asks %d",
				held[r], d.Allocatable, r, podsOf(holders), max(0, free), want)})
		}
	}
	if h != nil && Stranding(n, h) == StrandedUnusable && !slices.ContainsFunc(out, func(r Reason) bool { return r.Code == NodeUnusable }) {
		out = append(out, Reason{Code: NodeUnusable, Message: "cannot run GPU work: " + causeLine(h.Cause), Health: h.Cause})
	}
	if n.Unschedulable {
		by := "someone"
		if e := ledger.Of(n); e != nil {
			by = e.Actor
		}
		out = append(out, Reason{Code: Cordoned, Message: "cordoned, by " + by})
	}
	if t, ok := untolerated(p, n); ok {
		out = append(out, Reason{Code: UntoleratedTaint, Message: fmt.Sprintf("taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)})
	}
	if why, ok := mismatch(p, n); ok {
		out = append(out, Reason{Code: SelectorMismatch, Message: why})
	}
	return out, true
}

// untolerated is the first NoSchedule or NoExecute taint of the node the
// pod does not tolerate, as the scheduler's TaintToleration filter reads
// them; not the cordon's own taint (Cordoned says it).
func untolerated(p *snapshot.GPUPod, n *snapshot.Node) (corev1.Taint, bool) {
	return schedcorev1.FindMatchingUntoleratedTaint(klog.Background(), n.Taints, p.Tolerations, func(t *corev1.Taint) bool {
		return (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && t.Key != corev1.TaintNodeUnschedulable
	}, false)
}

// mismatch says how the pod's nodeSelector or required node affinity
// excludes the node: the first nodeSelector label that differs, else the
// affinity.
func mismatch(p *snapshot.GPUPod, n *snapshot.Node) (string, bool) {
	for _, k := range slices.Sorted(maps.Keys(p.NodeSelector)) {
		if v, ok := n.Labels[k]; !ok || v != p.NodeSelector[k] {
			have := "not set"
			if ok {
				have = "=" + v
			}
			return fmt.Sprintf("nodeSelector %s=%s, the node's %s %s", k, p.NodeSelector[k], k, have), true
		}
	}
	if p.Affinity == nil {
		return "", false
	}
	affinity := nodeaffinity.NewRequiredNodeAffinity(nil, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: p.Affinity}})
	if ok, _ := affinity.Match(n.API()); !ok {
		return "required node affinity does not match the node's labels", true
	}
	return "", false
}

// notOffered says what the nodes offer instead of what the pod asks.
func (c Cluster) notOffered(want map[string]int64) string {
	offered := map[string]int{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		for r, d := range n.Devices {
			if d.Allocatable > 0 || d.Capacity > 0 {
				offered[r]++
			}
		}
		if d := c.devices(n, snapshot.DRADriverName); d.Capacity > 0 {
			offered[snapshot.DRADriverName]++
		}
	}
	asks := slices.Sorted(maps.Keys(want))
	if len(offered) == 0 {
		return fmt.Sprintf("no node offers %s: no node advertises any GPU (is the device plugin running?)", strings.Join(asks, ", "))
	}
	var instead []string
	for _, r := range slices.Sorted(maps.Keys(offered)) {
		instead = append(instead, fmt.Sprintf("%s on %d node(s)", r, offered[r]))
	}
	hint := ""
	if slices.ContainsFunc(instead, func(s string) bool { return strings.HasPrefix(s, snapshot.GPUResource+".") }) {
		hint = " (time-slicing with renameByDefault renames it)"
	} else if slices.ContainsFunc(instead, func(s string) bool { return strings.HasPrefix(s, snapshot.MIGResourcePrefix) }) {
		hint = " (the MIG mixed strategy offers MIG devices by profile)"
	}
	return fmt.Sprintf("no node offers %s; offered: %s%s", strings.Join(asks, ", "), strings.Join(instead, ", "), hint)
}

// freeOf is the node's free devices of the pod's one resource.
func (c Cluster) freeOf(asks map[string]int64, n *snapshot.Node, held map[string]int64) int64 {
	for r := range asks {
		return max(0, c.devices(n, r).Allocatable-held[r])
	}
	return 0
}

// devices are the node's devices of a resource: its capacity and
// allocatable, or for the DRA driver's (snapshot.DRADriverName) the
// devices its pools publish (newest generation; vfio ones aside: the
// classes of GPUs do not pick them) and those no taint withholds. gpuops
// does not evaluate a class's CEL selectors: the scheduler's word on a
// class that picks only some devices (MIG) is quoted where they differ.
func (c Cluster) devices(n *snapshot.Node, r string) snapshot.DeviceCount {
	if r != snapshot.DRADriverName {
		return n.Devices[r]
	}
	var d snapshot.DeviceCount
	for _, dp := range c.Pools[n.Name] {
		withheld := map[string]bool{}
		for _, t := range dp.Tainted {
			withheld[t.Device] = true
		}
		d.Capacity += int64(dp.Devices - dp.VFIO)
		d.Allocatable += int64(dp.Devices - dp.VFIO - len(withheld))
	}
	d.Allocatable = max(0, d.Allocatable)
	return d
}

// claimAsks is how many GPU devices the pod's claims not yet allocated
// ask (0 when one is not made or not read yet: then it is not known), or,
// when one asks a device class that does not exist, says so and names the
// classes of GPUs that do.
func claimAsks(f *snapshot.GPUPods, p *snapshot.GPUPod) (int64, string) {
	var n int64
	for _, name := range p.Claims {
		cl, ok := f.Claims[p.Namespace+"/"+name]
		if name == "" || !ok {
			return 0, ""
		}
		if cl.Allocated {
			continue
		}
		gpu := f.Classes == nil // classes not read: the claim is a GPU pod's
		for _, class := range cl.Classes {
			isGPU, exists := f.Classes[class]
			if f.Classes != nil && !exists {
				classes := "no device class picks driver " + snapshot.DRADriverName + "'s devices"
				if gpus := f.GPUClasses(); len(gpus) > 0 {
					classes = "the classes of " + snapshot.DRADriverName + "'s devices: " + strings.Join(gpus, ", ")
				}
				return 0, fmt.Sprintf("claim %s asks device class %s, which does not exist; %s", name, class, classes)
			}
			gpu = gpu || isGPU
		}
		if gpu {
			n += cl.Asks
		}
	}
	return n, ""
}

// healthCause is the node's health cause of the code, first or also; nil
// when health does not find it.
func healthCause(h *health.Node, code string) *health.Cause {
	if h == nil {
		return nil
	}
	if h.Cause != nil && h.Cause.Code == code {
		return h.Cause
	}
	for i := range h.Also {
		if h.Also[i].Code == code {
			return &h.Also[i]
		}
	}
	return nil
}

// causeOf is the node's health cause, nil when it has none or is not
// judged.
func causeOf(h *health.Node) *health.Cause {
	if h == nil {
		return nil
	}
	return h.Cause
}

// deferred is the kubelet's word on a pod whose admission it defers
// (DeviceNotReady): on the pod's status, else its Warning Event; empty
// when none says so.
func deferred(p *snapshot.GPUPod, ws []snapshot.Warning) string {
	if p.Deferred != "" {
		return p.Deferred
	}
	if w, ok := snapshot.Warned(ws, snapshot.DeviceNotReady); ok {
		return w.Reason + ": " + w.Message
	}
	return ""
}

// pending is the state of a pod Pending since it was made: Waiting for
// less than stuck-after (0: never a finding, as for a pause), else
// Pending.
func (c Cluster) pending(p *snapshot.GPUPod) string {
	if c.StuckAfter == 0 || c.Now.Sub(p.Created) < c.StuckAfter {
		return Waiting
	}
	return Pending
}

func total(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}

// podsOf says how many pods of which namespaces hold a node's devices.
func podsOf(holders map[string]int) string {
	var parts []string
	n := 0
	for _, ns := range slices.Sorted(maps.Keys(holders)) {
		parts = append(parts, fmt.Sprintf("%d in %s", holders[ns], ns))
		n += holders[ns]
	}
	if n == 0 {
		return "no pod"
	}
	return fmt.Sprintf("%d pod(s): %s", n, strings.Join(parts, ", "))
}

// healthLine says a node's health: ready, not judged, or its cause.
func healthLine(h *health.Node) string {
	switch {
	case h == nil || !h.Judged:
		return "not a GPU node health judges"
	case h.Usable:
		return "health says ready"
	}
	return "health says " + causeLine(h.Cause)
}

func causeLine(c *health.Cause) string {
	if c == nil {
		return "unusable"
	}
	return strings.TrimSpace(c.Code+" "+c.Operand) + " (" + c.Message + ")"
}

// nodeNamed is the node of that name, or a node of that name alone when
// the cluster has none.
func (c Cluster) nodeNamed(name string) *snapshot.Node {
	if n := c.named[name]; n != nil {
		return n
	}
	return &snapshot.Node{Name: name}
}
