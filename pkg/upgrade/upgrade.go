// Package upgrade assesses a driver upgrade as the GPU Operator's upgrade
// controller sees it (NVIDIA/k8s-operator-libs pkg/upgrade, run by
// gpu-operator controllers/upgrade_controller.go): which node is done, on
// its way, waiting for the budget of the upgrade policy, stuck, failed and
// why, skipped, or left cordoned. It is pure: the snapshot (read with
// read.Options.Upgrades) and the clock come in, the verdicts go out.
package upgrade

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/words"
)

// The verdicts.
const (
	Done       = "done"        // upgrade-done, or no state and the driver pod runs the latest template
	InProgress = "in-progress" // moving through the states, or given a slot to start
	Waiting    = "waiting"     // upgrade-required, no slot in the budget (or autoUpgrade off)
	Stuck      = "stuck"       // in one state longer than stuckAfter
	Failed     = "failed"      // upgrade-failed
	Skipped    = "skipped"     // upgrade-required with the skip label
	// LeftCordoned: upgrade-done, yet still cordoned by the controller.
	LeftCordoned = "left-cordoned"
	// Outdated: no state (or upgrade-done) while the driver pod runs an
	// older template than its DaemonSet's: the controller has not taken the
	// node up yet, or never will (autoUpgrade off).
	Outdated = "outdated"
)

// Verdicts are every verdict, in the order a rollout goes.
var Verdicts = []string{Done, InProgress, Waiting, Stuck, Failed, Skipped, LeftCordoned, Outdated}

// Node is one node's part in the rollout, the Upgrade of its verdict:
// Verdict is the one word of Verdicts the upgrades view prints for it.
type Node struct {
	Node    string `json:"node"`
	State   string `json:"state"` // the state label's value; empty without one
	Verdict string `json:"verdict"`
	// Since is when the node entered its state, as the managedFields entry
	// of the state label's writer says (that writer's last write to the
	// node: it may be later than the change of state).
	Since *time.Time `json:"since,omitempty"`
	Cause string     `json:"cause,omitempty"`
	// Pool is the NVIDIADriver whose policy applies to the node; empty
	// when the ClusterPolicy's does.
	Pool string `json:"pool,omitempty"`
}

// Budget is how many upgrades a pool's policy lets the controller run, as
// it counts them (common_manager.go GetUpgradesAvailable).
type Budget struct {
	Nodes          int `json:"nodes"`          // the nodes it manages: those with a driver pod
	MaxParallel    int `json:"maxParallel"`    // maxParallelUpgrades; 0: no limit
	MaxUnavailable int `json:"maxUnavailable"` // maxUnavailable resolved against Nodes, rounded up
	// Available is how many upgrade-required nodes it may start on its
	// next pass; Starting are those it will (node order).
	Available int      `json:"available"`
	Starting  []string `json:"starting"`
	// InProgress are the nodes past upgrade-required and not done (failed
	// ones too): they use maxParallelUpgrades.
	InProgress []string `json:"inProgress"`
	// Unavailable are the nodes that use maxUnavailable: cordoned or
	// NotReady, whatever the reason, and those about to be cordoned.
	Unavailable []string `json:"unavailable"`
}

// Pool is the rollout of one NVIDIADriver's nodes, under its own policy.
type Pool struct {
	Name   string                  `json:"name"`
	Policy *snapshot.UpgradePolicy `json:"policy"`
	Budget Budget                  `json:"budget"`
	Counts map[string]int          `json:"counts"` // by verdict
}

// Rollout is the driver upgrade judged across the fleet. Policy and Budget are the
// ClusterPolicy's; with spec.driver.useNvidiaDriverCRD each NVIDIADriver
// upgrades its own nodes, in Pools, and Policy is nil.
type Rollout struct {
	Policy *snapshot.UpgradePolicy `json:"policy"`
	Budget Budget                  `json:"budget"`
	Pools  []Pool                  `json:"pools,omitempty"`
	Nodes  []Node                  `json:"nodes"`
	Counts map[string]int          `json:"counts"` // by verdict
}

// member is a node of the rollout and what its verdict is made of.
type member struct {
	node      *snapshot.Node
	state     string
	since     *time.Time
	driver    *snapshot.Pod // nil: no driver pod on the node
	validator *snapshot.Pod
	pool      string
}

// Trouble reports whether a verdict needs a person: failed, stuck or left
// cordoned (gpuops upgrades exits 1 on it).
func Trouble(verdict string) bool {
	return verdict == Failed || verdict == Stuck || verdict == LeftCordoned
}

// Settled reports whether counts by verdict (a rollout's, a pool's or a
// group's) are all done or skipped: nothing for a person to look at.
func Settled(counts map[string]int) bool {
	for v := range counts {
		if v != Done && v != Skipped {
			return false
		}
	}
	return true
}

// Assess assesses the upgrade of every node with a state label or a driver pod
// (of the roster's driver operand) as of now; a node in one state longer
// than stuckAfter is stuck (0: never). The nodes are taken in natural name
// order, whatever the snapshot's: the budget's slots go to the first
// upgrade-required nodes, so a read and the live store, which hold the
// nodes in different orders, give the same slots.
func Assess(s *snapshot.Snapshot, roster []operand.Operand, now time.Time, stuckAfter time.Duration) Rollout {
	// Every node is read through its Inputs, so that a node whose Inputs
	// are the same leaves the rollout as it was (pkg/live relies on it).
	projected := *s
	projected.Nodes = make([]snapshot.Node, len(s.Nodes))
	for i := range s.Nodes {
		projected.Nodes[i] = Inputs(&s.Nodes[i])
	}
	s = &projected
	drivers, validators := podsByNode(s, roster)
	crd := s.Policy != nil && s.Policy.NVIDIADriverCRD
	pools := map[string][]*member{}
	var order []*member
	nodes := judge.SortedNodes(s)
	for i := range nodes {
		n := &nodes[i]
		state, labelled := n.Labels[operand.UpgradeStateLabel]
		m := &member{node: n, state: state, driver: drivers[n.Name], validator: validators[n.Name]}
		if !labelled && m.driver == nil {
			continue
		}
		if crd {
			// The controller splits the nodes by their owner label and
			// skips those without (reconcileNVIDIADriverUpgrades).
			if m.pool = n.Labels[operand.NVIDIADriverOwner]; m.pool == "" {
				continue
			}
		}
		if c, ok := n.LabelChanges[operand.UpgradeStateLabel]; ok && labelled {
			m.since = &c.Time
		}
		pools[m.pool] = append(pools[m.pool], m)
		order = append(order, m)
	}

	r := Rollout{Counts: map[string]int{}}
	verdicts := map[*member]Node{}
	judgePool := func(name string, policy *snapshot.UpgradePolicy) Budget {
		b, slots := budget(pools[name], policy)
		for _, m := range pools[name] {
			verdicts[m] = assessNode(s, m, policy, b, slots, now, stuckAfter)
		}
		return b
	}
	if crd {
		for _, d := range s.NVIDIADrivers {
			if len(pools[d.Name]) > 0 {
				r.Pools = append(r.Pools, Pool{Name: d.Name, Policy: d.UpgradePolicy, Budget: judgePool(d.Name, d.UpgradePolicy)})
			}
		}
		for name := range pools { // nodes of an NVIDIADriver that is gone: no policy
			if !slices.ContainsFunc(r.Pools, func(p Pool) bool { return p.Name == name }) {
				r.Pools = append(r.Pools, Pool{Name: name, Budget: judgePool(name, nil)})
			}
		}
		slices.SortFunc(r.Pools, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	} else {
		if s.Policy != nil {
			r.Policy = s.Policy.UpgradePolicy
		}
		r.Budget = judgePool("", r.Policy)
	}
	r.Nodes = []Node{}
	for _, m := range order {
		if v := verdicts[m]; v.Verdict != "" {
			r.Nodes = append(r.Nodes, v)
			r.Counts[v.Verdict]++
			if i := slices.IndexFunc(r.Pools, func(p Pool) bool { return p.Name == m.pool }); i >= 0 {
				if r.Pools[i].Counts == nil {
					r.Pools[i].Counts = map[string]int{}
				}
				r.Pools[i].Counts[v.Verdict]++
			}
		}
	}
	return r
}

// Inputs is what the rollout reads of a node: its name, its upgrade state
// label (and who wrote it when), NVIDIADriver owner and skip labels, whether
// it is cordoned (by whom) or Ready, and the controller's validation start.
// Two nodes with the same Inputs, and the same driver and validator pods
// and upgrade Event, take the same part in the same rollout.
func Inputs(n *snapshot.Node) snapshot.Node {
	in := snapshot.Node{Name: n.Name, Unschedulable: n.Unschedulable, Ready: n.Ready, Cordon: n.Cordon}
	for _, k := range []string{operand.UpgradeStateLabel, operand.NVIDIADriverOwner, operand.UpgradeSkipLabel} {
		if v, ok := n.Labels[k]; ok {
			if in.Labels == nil {
				in.Labels = map[string]string{}
			}
			in.Labels[k] = v
		}
	}
	if c, ok := n.LabelChanges[operand.UpgradeStateLabel]; ok {
		in.LabelChanges = map[string]snapshot.LabelChange{operand.UpgradeStateLabel: c}
	}
	if v, ok := n.Annotations[operand.UpgradeValidationStart]; ok {
		in.Annotations = map[string]string{operand.UpgradeValidationStart: v}
	}
	return in
}

// Reads says which pods the rollout reads (a snapshot of fewer pods judges
// the same): the driver's, by the roster, and the operator validator's.
func Reads(roster []operand.Operand) func(*snapshot.Pod) (driver, read bool) {
	i := slices.IndexFunc(roster, func(o operand.Operand) bool { return o.Name == operand.Driver })
	return func(p *snapshot.Pod) (bool, bool) {
		if i >= 0 && roster[i].RunBy(p.DaemonSet) {
			return true, true
		}
		return false, p.DaemonSet == operand.UpgradeValidator
	}
}

// podsByNode finds each node's driver pod (a live one over one on its way
// out) and operator validator pod.
func podsByNode(s *snapshot.Snapshot, roster []operand.Operand) (drivers, validators map[string]*snapshot.Pod) {
	drivers, validators = map[string]*snapshot.Pod{}, map[string]*snapshot.Pod{}
	reads := Reads(roster)
	for j := range s.Pods {
		p := &s.Pods[j]
		if p.Node == "" || p.DaemonSet == "" {
			continue // the controller skips a driver pod not yet scheduled
		}
		driver, read := reads(p)
		if !read {
			continue
		}
		into := validators
		if driver {
			into = drivers
		}
		if prev := into[p.Node]; prev == nil || prev.Deleting && !p.Deleting {
			into[p.Node] = p
		}
	}
	return drivers, validators
}

// budget counts a pool's budget as the controller does, and hands its
// upgrade slots to the upgrade-required nodes in order (upgrade_inplace.go
// ProcessUpgradeRequiredNodes): slots says which got one.
func budget(ms []*member, policy *snapshot.UpgradePolicy) (Budget, map[*member]bool) {
	b := Budget{Starting: []string{}, InProgress: []string{}, Unavailable: []string{}}
	required, unavailable := 0, 0
	for _, m := range ms {
		if m.driver == nil || !operand.UpgradeCounted(m.state) {
			continue // the controller builds its state from the driver pods
		}
		b.Nodes++
		if operand.UpgradeInProgress(m.state) {
			b.InProgress = append(b.InProgress, m.node.Name)
		}
		if m.state == operand.UpgradeRequired {
			required++
		}
		// GetCurrentUnavailableNodes, plus the cordon-required nodes on
		// top (counted twice when already cordoned, as upstream does).
		if m.node.Unschedulable || !m.node.Ready {
			unavailable++
		}
		if m.state == operand.UpgradeCordonRequired {
			unavailable++
		}
		if m.node.Unschedulable || !m.node.Ready || m.state == operand.UpgradeCordonRequired {
			b.Unavailable = append(b.Unavailable, m.node.Name)
		}
	}
	slots := map[*member]bool{}
	if policy == nil || !policy.AutoUpgrade {
		return b, slots // the controller does nothing (and clears the state labels)
	}
	b.MaxParallel = policy.MaxParallelUpgrades
	b.MaxUnavailable = b.Nodes
	if policy.MaxUnavailable != nil {
		// Rounded up, as upgrade_controller.go resolves it.
		if v, err := intstr.GetScaledValueFromIntOrPercent(policy.MaxUnavailable, b.Nodes, true); err == nil {
			b.MaxUnavailable = v
		}
	}
	avail := required
	if b.MaxParallel > 0 {
		avail = b.MaxParallel - len(b.InProgress)
	}
	avail = min(avail, b.MaxUnavailable)
	switch {
	case unavailable >= b.MaxUnavailable:
		avail = 0
	case b.MaxUnavailable < b.Nodes && unavailable+avail > b.MaxUnavailable:
		avail = b.MaxUnavailable - unavailable
	}
	b.Available = avail
	for _, m := range ms {
		if m.driver == nil || m.state != operand.UpgradeRequired || skipped(m.node) {
			continue
		}
		// A node already cordoned goes ahead even without a slot.
		if avail > 0 || m.node.Unschedulable {
			slots[m] = true
			b.Starting = append(b.Starting, m.node.Name)
			avail--
		}
	}
	return b, slots
}

func skipped(n *snapshot.Node) bool { return n.Labels[operand.UpgradeSkipLabel] == "true" }

// assessNode gives one node its verdict.
func assessNode(s *snapshot.Snapshot, m *member, policy *snapshot.UpgradePolicy, b Budget, slots map[*member]bool, now time.Time, stuckAfter time.Duration) Node {
	v := Node{Node: m.node.Name, State: m.state, Since: m.since, Pool: m.pool}
	stuck := func() bool { return stuckAfter > 0 && m.since != nil && now.Sub(*m.since) > stuckAfter }
	inState := func() string {
		return fmt.Sprintf("in %s for %s", m.state, now.Sub(*m.since).Truncate(time.Second))
	}
	switch m.state {
	case "":
		switch sync := inSync(s, m.driver); {
		case sync == nil:
			return Node{} // the DaemonSet's template is unknown: no verdict
		case *sync:
			v.Verdict = Done
		default:
			v.Verdict, v.Cause = Outdated, outdated(m.driver, policy)
		}
	case operand.UpgradeDone:
		v.Verdict = Done
		if sync := inSync(s, m.driver); sync != nil && !*sync {
			v.Verdict, v.Cause = Outdated, outdated(m.driver, policy)
		} else if m.node.Unschedulable {
			v.Verdict, v.Cause = leftCordoned(m.node)
		}
	case operand.UpgradeRequired:
		switch {
		case skipped(m.node):
			v.Verdict, v.Cause = Skipped, operand.UpgradeSkipLabel+"=true: the controller never starts its upgrade"
		case policy == nil || !policy.AutoUpgrade:
			v.Verdict, v.Cause = Waiting, "autoUpgrade is off: the controller upgrades no node"
		case !slots[m]:
			v.Verdict, v.Cause = Waiting, spent(s, b)
		case stuck():
			v.Verdict, v.Cause = Stuck, inState()+": it had a slot and did not start"
		default:
			v.Verdict = InProgress
			if m.node.Unschedulable {
				v.Cause = "already cordoned: the controller starts it whatever the budget"
			}
		}
	case operand.UpgradeFailed:
		v.Verdict, v.Cause = Failed, failure(s, m, now)
	default:
		v.Verdict = InProgress
		if !slices.Contains(operand.UpgradeStates, m.state) {
			v.Cause = "a state the controller does not know: it leaves the node alone"
		}
		if stuck() {
			v.Verdict, v.Cause = Stuck, inState()
			if d := detail(s, m); d != "" {
				v.Cause += ": " + d
			}
		}
	}
	return v
}

// inSync says whether the driver pod runs its DaemonSet's latest template;
// nil when either hash is unknown.
func inSync(s *snapshot.Snapshot, p *snapshot.Pod) *bool {
	if p == nil || p.Revision == "" || s.Revisions[p.DaemonSet] == "" {
		return nil
	}
	sync := p.Revision == s.Revisions[p.DaemonSet]
	return &sync
}

func outdated(p *snapshot.Pod, policy *snapshot.UpgradePolicy) string {
	cause := "driver pod " + p.Name + " runs an older template of " + p.DaemonSet
	if policy == nil || !policy.AutoUpgrade {
		return cause + ", and autoUpgrade is off: it stays until someone deletes it"
	}
	return cause + ": the controller marks the node upgrade-required on its next pass"
}

// leftCordoned tells a node the controller cordoned and did not uncordon
// from one a person (or another controller) cordoned.
func leftCordoned(n *snapshot.Node) (verdict, cause string) {
	switch {
	case n.Cordon == nil:
		return Done, "cordoned, by whom unknown"
	case n.Cordon.Manager == operand.UpgradeManager:
		return LeftCordoned, "cordoned by " + n.Cordon.Manager + " at " + n.Cordon.Time.Format(time.RFC3339) + ", which did not uncordon it"
	}
	return Done, "cordoned by " + n.Cordon.Manager + " at " + n.Cordon.Time.Format(time.RFC3339)
}

// spent says why an upgrade-required node has no slot: which nodes use the
// budget.
func spent(s *snapshot.Snapshot, b Budget) string {
	var parts []string
	if b.MaxParallel > 0 && len(b.InProgress)+len(b.Starting) >= b.MaxParallel {
		parts = append(parts, fmt.Sprintf("maxParallelUpgrades %d used by %s", b.MaxParallel, strings.Join(slices.Concat(b.InProgress, b.Starting), ", ")))
	}
	if n := len(b.Unavailable) + len(b.Starting); n > 0 && n >= b.MaxUnavailable {
		var why []string
		for _, name := range b.Unavailable {
			why = append(why, name+" ("+unavailableWhy(s, name)+")")
		}
		why = append(why, b.Starting...)
		parts = append(parts, fmt.Sprintf("maxUnavailable %d used by %s", b.MaxUnavailable, strings.Join(why, ", ")))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("maxUnavailable %d of %s", b.MaxUnavailable, words.Count(b.Nodes, "node")))
	}
	return "no upgrade slot: " + strings.Join(parts, "; ")
}

func unavailableWhy(s *snapshot.Snapshot, name string) string {
	i := slices.IndexFunc(s.Nodes, func(n snapshot.Node) bool { return n.Name == name })
	n := &s.Nodes[i]
	switch {
	case n.Unschedulable && n.Cordon != nil:
		return "cordoned by " + n.Cordon.Manager
	case n.Unschedulable:
		return "cordoned"
	case !n.Ready:
		return "NotReady"
	}
	return operand.UpgradeCordonRequired
}

// failure is the cause the controller failed the node for: a driver pod
// restarting while not Ready (common_manager.go isDriverPodFailing),
// validation not done in time (validation_manager.go), else what its
// latest warning says (a failed drain or pod deletion). A Normal Event is
// the controller's routine word on a state change ("Successfully updated
// node state label to upgrade-failed"), no cause: once the driver recovers
// it would read as one.
func failure(s *snapshot.Snapshot, m *member, now time.Time) string {
	if p := m.driver; p != nil && !p.Health.Ready && p.Health.Restarts > operand.UpgradeMaxRestarts {
		return fmt.Sprintf("driver pod %s: container %s restarted %d times and is not Ready (the controller fails a node past %d)",
			p.Name, p.Health.Container, p.Health.Restarts, operand.UpgradeMaxRestarts)
	}
	limit := operand.UpgradeValidationTimeout
	if at, ok := unixAnnotation(m.node, operand.UpgradeValidationStart); ok && now.Sub(at) > limit {
		return fmt.Sprintf("validation not done %s after it began at %s", limit, at.Format(time.RFC3339))
	}
	// The controller drops the start annotation when validation times out:
	// a validator pod still not Ready is what is left of it.
	if p := m.validator; p != nil && !p.Health.Ready {
		return fmt.Sprintf("validator pod %s not Ready: validation gives up after %s", p.Name, limit)
	}
	if e, ok := s.UpgradeEvents[m.node.Name]; ok && e.Type == corev1.EventTypeWarning {
		return e.Message + " (" + e.Time.Format(time.RFC3339) + ")"
	}
	return "no cause left to read: the driver and validator pods are fine and no GPUDriverUpgrade Event says why (a drain or pod deletion that failed leaves only the Event)"
}

// detail says what a stuck node waits for, where the snapshot tells.
func detail(s *snapshot.Snapshot, m *member) string {
	switch p := m.validator; {
	case m.state == operand.UpgradeValidationRequired && p == nil:
		return "no validator pod on the node"
	case m.state == operand.UpgradeValidationRequired && !p.Health.Ready:
		return "validator pod " + p.Name + " not Ready"
	}
	if p := m.driver; m.state == operand.UpgradePodRestartRequired && p != nil && !p.Health.Ready {
		d := "driver pod " + p.Name + " not Ready"
		if p.Health.Container != "" {
			d += fmt.Sprintf(" (%s %s, %d restarts)", p.Health.Container, p.Health.State, p.Health.Restarts)
		}
		return d
	}
	if e, ok := s.UpgradeEvents[m.node.Name]; ok {
		return e.Message
	}
	return ""
}

// unixAnnotation reads one of the controller's start-time annotations.
func unixAnnotation(n *snapshot.Node, key string) (time.Time, bool) {
	sec, err := strconv.ParseInt(n.Annotations[key], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}
