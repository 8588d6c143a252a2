// Package health says, for each GPU node, why it cannot run GPU work, or
// that it can: the root cause along the GPU Operator's start-up chain
// (driver, container toolkit, operator validator, then the device plugin and
// the other GPU clients; the DRA and sandbox stacks likewise), with the
// operands waiting behind it. It is pure, like pkg/judge: a snapshot and the
// time in, verdicts out.
//
// The snapshot must hold the nodes' status and all their labels (not
// read.Options.DeployLabelsOnly): readiness, device counts and GFD's labels
// are part of the verdict.
package health

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Cause codes, stable for scripts reading the JSON output.
const (
	NodeNotReady = "node-not-ready" // the node is NotReady: nothing on it runs
	Missing      = "missing"        // asked for, no pod of its DaemonSet on the node
	NotRunning   = "not-running"    // its pod is Pending (unscheduled, creating), Failed or Unknown
	// A container waits for a reason other than starting up:
	// ImagePullBackOff, ErrImagePull, CreateContainerConfigError, ...
	ContainerWaiting = "container-waiting"
	// A container waits in CrashLoopBackOff, or was restarted after a
	// failure and is not ready.
	CrashLoop   = "crash-loop"
	InitWaiting = "init-waiting" // the pod is still in one of its init containers
	NotReady    = "not-ready"    // the pod runs, not Ready
	Paused      = "paused"       // a helper paused the operand (operand.Pauses)
	Stuck       = "stuck"        // a pause that has lasted longer than allowed
	// The operand runs without one it needs, which the node does not ask
	// for (the order check's rule, operand.AllRules).
	Order = "order"
	// The device plugin is ready, yet the node has no allocatable GPU
	// device (nvidia.com/gpu, a shared or MIG device): typically NVML
	// fails on the host.
	GPUsNotAdvertised = "gpus-not-advertised"
	// Fewer devices are allocatable than the node has (the device plugin
	// reports unhealthy ones), or than GFD counts; or the kubelet refuses
	// GPU pods at admission because the plugin fails to allocate one it
	// advertises (kubelet.go, admission).
	GPUsUnhealthy = "gpus-unhealthy"
	// The driver upgrade failed on the node (its state label is
	// upgrade-failed), or has held one state longer than allowed: the
	// driver is the link that is down, whatever its pod shows.
	UpgradeFailed = "upgrade-failed"
	UpgradeStuck  = "upgrade-stuck"
	// The DRA stack (dra.go): the kubelet plugin is ready, yet the node
	// publishes no device of driver gpu.nvidia.com (no ResourceSlice, or
	// slices listing none); a pool of its devices has fewer ResourceSlices
	// than its resourceSliceCount in its newest generation (its devices are
	// not all known: never read as none); devices carry a taint that keeps
	// them from new claims (NoSchedule, NoExecute).
	DevicesNotPublished = "devices-not-published"
	PoolIncomplete      = "pool-incomplete"
	DevicesTainted      = "devices-tainted"
	// The container runtime has no runtime for the operands' RuntimeClass
	// handler (nvidia): their pods cannot get a sandbox
	// (FailedCreatePodSandBox), though the toolkit, which writes that
	// runtime into the runtime's config, may run (kubelet.go).
	RuntimeNotConfigured = "runtime-not-configured"
	// A note, not a cause: the validator's workload pod was refused a GPU
	// because the pods on the node request all it can allocate. The node
	// is full, not broken: usable (kubelet.go).
	GPUsAllInUse = "gpus-all-in-use"
)

// Codes are every code health says, the chain's causes first, then how the
// node offers its GPUs (sharing.go, dra.go), then what the kubelet reports
// (kubelet.go: a cause, and a note), then the driver the host has
// (hostdriver.go, a note): what the help and the docs list.
var Codes = []string{NodeNotReady, Missing, NotRunning, ContainerWaiting, CrashLoop, InitWaiting, NotReady, Paused, Stuck,
	Order, GPUsNotAdvertised, GPUsUnhealthy, UpgradeFailed, UpgradeStuck,
	SharingConfigUnknown, SharingNotApplied, MPSDaemonNotReady, MIGConfigUnknown, MIGFailed, MIGStuck, MIGLayoutMismatch,
	DevicesNotPublished, PoolIncomplete, DevicesTainted, RuntimeNotConfigured, GPUsAllInUse, DriverOnHost}

// Cause is why a node cannot run GPU work.
type Cause struct {
	Code    string `json:"code"`
	Operand string `json:"operand,omitempty"` // empty for the node itself
	Message string `json:"message"`
}

// Node is the health of one node.
type Node struct {
	Node string `json:"node"`
	// Judged: the node has a GPU (nvidia.com/gpu.present=true) or deploy
	// labels. Other nodes are not GPU nodes: never unusable.
	Judged bool `json:"judged"`
	Usable bool `json:"usable"`
	// Cause is the root cause: the earliest link of the chain that fails
	// and waits on no other failing link. Nil when the node is usable.
	Cause *Cause `json:"cause,omitempty"`
	// Blocked are the failing operands waiting, directly or not, behind the
	// cause, in chain order: not findings of their own.
	Blocked []string `json:"blocked"`
	// Also are further root causes, independent of the first (an operand
	// failing on its own beside it), in chain order.
	Also []Cause `json:"also,omitempty"`
	// Evidence says, for the cause, the blocked and the other failing
	// operands, what their pods show: container, reason, restarts, for how
	// long.
	Evidence []string `json:"evidence,omitempty"`
	// Notes are findings that are a check's artefact, not the node's fault
	// (GPUsAllInUse): said, and the node usable all the same.
	Notes []Cause `json:"notes,omitempty"`
	// OutOfService says who took the node out of service (cordoned, or
	// tainted against new work) and since when: the ledger's entry, nil
	// when it is in service. Usable or not, it then takes no new work.
	OutOfService *ledger.Entry `json:"outOfService,omitempty"`
	// Marks are what gpuops's quarantine reads of the node besides
	// (pkg/quarantine); not printed.
	Marks ledger.Marks `json:"-"`
	// Hints are the host faults the node's failing containers show
	// (pkg/signature): in what the kubelet reports (a termination message,
	// a Warning Event), always; in their logs, read only when asked (health
	// --logs), which the pipeline adds after the verdict. They never change
	// the verdict, but for the one line that excuses a wait
	// (signature.Signature.Excuses: DriverOnHost).
	Hints []signature.Hint `json:"hints,omitempty"`
}

// Assess assesses every node of the snapshot, in natural name order.
func Assess(s *snapshot.Snapshot, roster []operand.Operand, now time.Time, stuckAfter time.Duration) []Node {
	release, _ := s.Release() // the pipeline says the note
	c := newChain(roster, release, s.Policy)
	c.offered = s.Offers
	c.kubelet = newKubelet(s)
	pods := podsByNode(s.Pods)
	nodes := judge.SortedNodes(s)
	out := make([]Node, len(nodes))
	for i, n := range nodes {
		out[i] = c.assess(n, pods[n.Name], s.DevicePools, now, stuckAfter)
	}
	return out
}

// podsByNode indexes the DaemonSet pods by the node they are on or made for.
func podsByNode(pods []snapshot.Pod) map[string][]*snapshot.Pod {
	out := make(map[string][]*snapshot.Pod)
	for i := range pods {
		if p := &pods[i]; p.DaemonSet != "" && p.Placement() != "" {
			out[p.Placement()] = append(out[p.Placement()], p)
		}
	}
	return out
}

// link is one operand on one node: healthy when code is empty.
type link struct {
	op       operand.Operand
	asked    bool          // its deploy label is "true" (and the policy runs it)
	pod      *snapshot.Pod // the pod judged; nil when there is none
	present  bool          // a pod of it is present (judge.Presence's sense)
	pause    *judge.Pause
	code     string
	message  string
	evidence string
	hints    []signature.Hint // the host faults the kubelet's reports of its pod name
	blockers []int            // failing links it waits on, by index
}

func (l *link) fail(code, message, evidence string) {
	l.code, l.message, l.evidence = code, message, evidence
}

// assess judges one node.
func (c chain) assess(n snapshot.Node, pods []*snapshot.Pod, pools map[string][]snapshot.DevicePool, now time.Time, stuckAfter time.Duration) Node {
	out := Node{Node: n.Name, Usable: true, Blocked: []string{}}
	if !gpuNode(n.Labels) {
		return out
	}
	out.Judged = true
	out.OutOfService, out.Marks = ledger.Of(&n), ledger.MarksOf(&n)
	pauses := judge.Pauses(n, c.ops)
	links := make([]link, len(c.ops)) // one per operand of the chain
	for i, o := range c.ops {
		l := &links[i]
		l.op = o
		l.asked = o.Off == "" && o.AskedBy(n.Labels)
		l.pod, l.present = pick(o, pods)
		if j := slices.IndexFunc(pauses, func(p judge.Pause) bool { return p.Operand == o.Name }); j >= 0 && o.Off == "" {
			l.pause = &pauses[j]
		}
	}
	if !n.Ready {
		out.Usable = false
		out.Cause = &Cause{Code: NodeNotReady, Message: "the node is NotReady: its kubelet does not run or report its pods"}
		for _, l := range links {
			if l.asked || l.pause != nil {
				out.Blocked = append(out.Blocked, l.op.Name)
			}
		}
		return out
	}
	for i := range links {
		c.state(&links[i], n, now, stuckAfter)
	}
	note := c.full(links, n, now)
	c.runtime(links)
	c.upgrade(links, n, now, stuckAfter)
	host, hostHint := c.hostDriver(links)
	c.order(links, n.Labels)
	c.devices(links, n)
	c.admission(links, n, now)
	c.offers(links, n, pods, now, stuckAfter)
	c.dra(links, n.Name, pools)
	c.blockers(links)
	if out = rootCauses(out, links); note != nil {
		out.Notes = append(out.Notes, *note)
	}
	if host != nil {
		out.Notes = append(out.Notes, *host)
		out.Hints = append(out.Hints, *hostHint)
	}
	return out
}

// gpuNode reports whether the node is one the operator deploys to: it has a
// GPU or deploy labels.
func gpuNode(labels map[string]string) bool {
	if labels[operand.GPUPresent] == "true" {
		return true
	}
	for k := range labels {
		if operand.IsDeployLabel(k) {
			return true
		}
	}
	return false
}

// pick chooses the operand's pod to judge among the node's: the one doing
// best (during a rollout an old and a new pod can stand side by side), and
// whether any is present.
func pick(o operand.Operand, pods []*snapshot.Pod) (*snapshot.Pod, bool) {
	var best *snapshot.Pod
	score, present := -1, false
	for _, p := range pods {
		if !o.RunBy(p.DaemonSet) {
			continue
		}
		present = present || p.Present()
		s := 0
		switch {
		case p.Present() && p.Health.Ready:
			s = 3
		case p.Present():
			s = 2
		case !p.Deleting:
			s = 1
		}
		if s > score {
			best, score = p, s
		}
	}
	return best, present
}

// state judges the link by itself: its pause, or its pod.
func (c chain) state(l *link, n snapshot.Node, now time.Time, stuckAfter time.Duration) {
	if p := l.pause; p != nil {
		msg := fmt.Sprintf("%s: paused by %s %s", p.Value, p.Helper, p.While)
		if !p.Since.IsZero() {
			msg += fmt.Sprintf(", since %s (%s)", p.Since.UTC().Format(time.RFC3339), age(now, p.Since))
		}
		if p.StuckAt(now, stuckAfter) {
			l.fail(Stuck, msg+", longer than "+stuckAfter.String(), "label "+l.op.LabelKey()+"="+n.Labels[l.op.LabelKey()])
			return
		}
		l.fail(Paused, msg, "label "+l.op.LabelKey()+"="+n.Labels[l.op.LabelKey()])
		return
	}
	if !l.asked {
		return // the host provides it, the policy switches it off, or the node does not want it
	}
	p := l.pod
	if p == nil || p.Deleting {
		msg := "no pod of DaemonSet " + l.op.DaemonSet + " on the node"
		if p != nil {
			msg = "only pod " + p.Name + ", being deleted"
		}
		l.fail(Missing, msg, msg)
		return
	}
	h := p.Health
	var code, msg string
	switch {
	case h.State == "CrashLoopBackOff":
		code, msg = CrashLoop, fmt.Sprintf("container %s of pod %s is in CrashLoopBackOff", h.Container, p.Name)+restarts(h)
	case h.Container != "" && h.State != "Running" && !terminated(h.State):
		code, msg = ContainerWaiting, fmt.Sprintf("container %s of pod %s waits: %s", h.Container, p.Name, h.State)
	case h.Init != "":
		code, msg = InitWaiting, fmt.Sprintf("pod %s waits in init container %s (Init:%d/%d)%s", p.Name, h.Init, h.InitDone, h.InitTotal, sinceText(now, h.InitSince))
	case p.Phase != corev1.PodRunning:
		code, msg = NotRunning, fmt.Sprintf("pod %s is %s", p.Name, p.Phase)
		if p.Reason != "" {
			msg += ": " + p.Reason
		}
	case h.Ready:
		return // healthy: no evidence to build, as for most links of a fleet
	case h.Container != "" && (terminated(h.State) || terminated(h.LastState)):
		code, msg = CrashLoop, fmt.Sprintf("container %s of pod %s failed and is not ready", h.Container, p.Name)+restarts(h)
	default:
		code, msg = NotReady, fmt.Sprintf("pod %s runs but is not Ready%s", p.Name, sinceText(now, h.ReadySince))
	}
	l.fail(code, msg, strings.Join(append([]string{podEvidence(p, now)}, c.kubeletEvidence(l, n.Name)...), "; "))
	l.hints = c.reportedHints(l)
}

// upgrade makes a failed or stuck driver upgrade the driver's failure: the
// upgrade controller walks only nodes with a driver pod, so a driver the
// host provides is never upgrading.
func (c chain) upgrade(links []link, n snapshot.Node, now time.Time, stuckAfter time.Duration) {
	i := c.index(operand.Driver)
	state := n.Labels[operand.UpgradeStateLabel]
	if i < 0 || state == "" || !(links[i].asked || links[i].pod != nil) {
		return
	}
	l, ev := &links[i], "label "+operand.UpgradeStateLabel+"="+state
	since := n.LabelChanges[operand.UpgradeStateLabel].Time
	switch {
	case state == operand.UpgradeFailed:
		l.fail(UpgradeFailed, "the driver upgrade failed on the node (gpuops upgrades says why)", ev)
	case operand.UpgradeInProgress(state) && stuckAfter > 0 && !since.IsZero() && now.Sub(since) > stuckAfter:
		l.fail(UpgradeStuck, fmt.Sprintf("the driver upgrade has been in %s since %s (%s), longer than %s", state, since.UTC().Format(time.RFC3339), age(now, since), stuckAfter), ev)
	}
}

// terminated reports whether a container state names a failed termination.
func terminated(reason string) bool {
	return reason != "" && reason != "Running" && reason != "Completed" && !isWaiting(reason)
}

// isWaiting reports whether a reason is one a waiting container gives. The
// kubelet's waiting reasons are few and known; anything else a container
// shows is how it terminated (Error, OOMKilled, exit code 1, ...).
func isWaiting(reason string) bool {
	switch reason {
	case "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull", "InvalidImageName",
		"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "PreStartHookError",
		"PostStartHookError", "ContainerCreating", "PodInitializing":
		return true
	}
	return false
}

// LogOf says whether the pod's worst container has a log to read, and
// which instance's: the one before for a container waiting to start again
// after it ran (CrashLoopBackOff), the current one for a container that
// terminated; none for a container that never ran (ImagePullBackOff,
// CreateContainerConfigError, ...) or when no container is in a bad state.
func LogOf(h snapshot.PodHealth) (previous, ok bool) {
	switch {
	case h.Container == "":
		return false, false
	case terminated(h.State):
		return false, true
	case isWaiting(h.State):
		ran := h.Restarts > 0 || h.LastState != ""
		return ran, ran
	}
	ran := h.Restarts > 0 // running again after a failure, not ready: the instance that failed
	return ran, ran
}

func restarts(h snapshot.PodHealth) string {
	s := fmt.Sprintf(" after %d restarts", h.Restarts)
	if h.LastState != "" {
		s += ", last terminated: " + h.LastState
	}
	return s
}

// order marks a present operand that runs without an operand it needs which
// the node does not ask for: the order check's finding. (One the node asks
// for is a failing link of its own.)
func (c chain) order(links []link, labels map[string]string) {
	for i := range links {
		l := &links[i]
		if l.code != "" || !l.present {
			continue
		}
		for _, r := range c.rules[l.op.Name] {
			need := &links[c.index(r.Needs)]
			if need.asked || need.pause != nil || need.present || r.Excused(labels, need.op) {
				continue
			}
			msg := fmt.Sprintf("%s runs without %s, which the node does not ask for (%s)", l.op.Name, r.Needs, r.Finding)
			l.fail(Order, msg, fmt.Sprintf("label %s=%q", need.op.LabelKey(), labels[need.op.LabelKey()]))
			break
		}
	}
}

// devices checks, once the device plugin is ready, the devices it
// advertises against what the node has.
func (c chain) devices(links []link, n snapshot.Node) {
	i := c.index(operand.DevicePlugin)
	if i < 0 || !links[i].asked || links[i].code != "" {
		return
	}
	l := &links[i]
	gpu := n.Devices[snapshot.GPUResource]
	// whole counts the devices that are each a GPU or a share of one: all
	// but MIG devices (nvidia.com/gpu, or nvidia.com/gpu.shared when the
	// device plugin's sharing config renames them).
	var allocatable, whole int64
	var names []string
	mig := false
	for name, d := range n.Devices {
		allocatable += d.Allocatable
		names = append(names, name)
		if strings.HasPrefix(name, snapshot.MIGResourcePrefix) {
			mig = true
		} else {
			whole += d.Capacity
		}
	}
	slices.Sort(names)
	if allocatable == 0 {
		l.fail(GPUsNotAdvertised, fmt.Sprintf("the device plugin is ready, yet the node has no allocatable %s (capacity %d) nor MIG device",
			snapshot.GPUResource, gpu.Capacity), devicesText(n.Devices))
		return
	}
	var short []string
	for _, name := range names {
		if d := n.Devices[name]; d.Allocatable < d.Capacity {
			short = append(short, fmt.Sprintf("%d of %d %s allocatable: %d unhealthy", d.Allocatable, d.Capacity, name, d.Capacity-d.Allocatable))
		}
	}
	// GFD counts the physical GPUs; compare when each is one device or
	// shared (no MIG): sharing only multiplies them.
	strategy := n.Labels[operand.MIGStrategyLabel]
	if count, err := strconv.ParseInt(n.Labels[operand.GPUCountLabel], 10, 64); err == nil && !mig &&
		(strategy == "" || strategy == "none") && count > whole {
		short = append(short, fmt.Sprintf("GFD counts %d GPUs, the device plugin advertises %d", count, whole))
	}
	if len(short) > 0 {
		l.fail(GPUsUnhealthy, strings.Join(short, "; "), devicesText(n.Devices))
	}
}

func devicesText(d map[string]snapshot.DeviceCount) string {
	if len(d) == 0 {
		return "no NVIDIA device in the node's capacity"
	}
	names := make([]string, 0, len(d))
	for name := range d {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s capacity %d allocatable %d", name, d[name].Capacity, d[name].Allocatable)
	}
	return strings.Join(parts, ", ")
}

func (c chain) index(name string) int {
	return slices.IndexFunc(c.ops, func(o operand.Operand) bool { return o.Name == name })
}

// blockers finds, for each failing link, the failing links it waits on:
// those paused by the same helper before it in the chain (one pause, one
// cause); otherwise the operands its rules need and the one its current init
// container waits for, when they are not far enough. A missing pod waits on
// no one: its DaemonSet makes it whatever runs below.
func (c chain) blockers(links []link) {
	for i := range links {
		l := &links[i]
		if l.code == "" || l.code == Missing {
			continue
		}
		if t := c.index(operand.ContainerToolkit); t >= 0 && t != i && links[t].code == RuntimeNotConfigured && c.sandboxBlocked(l) {
			l.blockers = append(l.blockers, t)
		}
		if l.pause != nil {
			for j := range i {
				if p := links[j].pause; p != nil && p.Value == l.pause.Value {
					l.blockers = append(l.blockers, j)
					break
				}
			}
			continue
		}
		for _, r := range c.rules[l.op.Name] {
			if j := c.index(r.Needs); links[j].code != "" {
				l.blockers = append(l.blockers, j)
			}
		}
		if l.code != InitWaiting {
			continue
		}
		k := c.initIndex(l.op.Name, l.pod.Health.Init)
		if k < 0 || c.inits[l.op.Name][k].WaitsOn == "" {
			continue
		}
		w := c.inits[l.op.Name][k]
		if j := c.index(w.WaitsOn); !c.farEnough(&links[j], w.Past) && !slices.Contains(l.blockers, j) {
			l.blockers = append(l.blockers, j)
		}
	}
}

// farEnough reports whether a link has got as far as another's init
// container waits for: ready, or past the init container named.
func (c chain) farEnough(l *link, past string) bool {
	if l.code == "" {
		return true
	}
	if past == "" || l.pod == nil || l.pause != nil {
		return false
	}
	h := l.pod.Health
	if h.Init == "" {
		return l.pod.Phase == corev1.PodRunning // its init containers have all completed
	}
	k := c.initIndex(l.op.Name, past)
	return k >= 0 && h.InitDone > k
}

// rootCauses picks the root causes among the failing links and lists what
// waits behind the first.
func rootCauses(out Node, links []link) Node {
	var roots []int
	for i, l := range links {
		if l.code != "" && len(l.blockers) == 0 {
			roots = append(roots, i)
		}
	}
	if len(roots) == 0 {
		for i, l := range links {
			if l.code != "" { // links waiting on each other: take the earliest
				roots = append(roots, i)
				break
			}
		}
	}
	if len(roots) == 0 {
		return out
	}
	out.Usable = false
	cause := roots[0]
	out.Cause = &Cause{Code: links[cause].code, Operand: links[cause].op.Name, Message: links[cause].message}
	behind := map[int]bool{cause: true}
	for changed := true; changed; {
		changed = false
		for i, l := range links {
			if !behind[i] && slices.ContainsFunc(l.blockers, func(j int) bool { return behind[j] }) {
				behind[i], changed = true, true
			}
		}
	}
	for i, l := range links {
		switch {
		case l.code == "":
			continue
		case i == cause:
		case behind[i]:
			out.Blocked = append(out.Blocked, l.op.Name)
		case slices.Contains(roots, i):
			out.Also = append(out.Also, Cause{Code: l.code, Operand: l.op.Name, Message: l.message})
		}
		out.Evidence = append(out.Evidence, l.op.Name+": "+l.evidence)
		out.Hints = append(out.Hints, l.hints...)
	}
	return out
}

// podEvidence says what a pod shows: its phase, readiness, the worst
// container and the init container it is in.
func podEvidence(p *snapshot.Pod, now time.Time) string {
	h := p.Health
	parts := []string{"pod " + p.Name + " " + string(p.Phase)}
	if h.Init != "" {
		parts = append(parts, fmt.Sprintf("in init container %s (Init:%d/%d)%s", h.Init, h.InitDone, h.InitTotal, forText(now, h.InitSince)))
	}
	if h.Container != "" {
		c := fmt.Sprintf("container %s %s, %d restarts", h.Container, h.State, h.Restarts)
		if h.LastState != "" {
			c += ", last terminated " + h.LastState
		}
		parts = append(parts, c)
	}
	if !h.Ready && p.Phase == corev1.PodRunning {
		parts = append(parts, "not Ready"+forText(now, h.ReadySince))
	}
	return strings.Join(parts, ", ")
}

func age(now, since time.Time) string { return now.Sub(since).Truncate(time.Second).String() }

// sinceText is " since <time> (<age>)", or nothing when the time is unknown.
func sinceText(now, since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf(" since %s (%s)", since.UTC().Format(time.RFC3339), age(now, since))
}

// forText is " for <age>", or nothing when the time is unknown.
func forText(now, since time.Time) string {
	if since.IsZero() {
		return ""
	}
	return " for " + age(now, since)
}
