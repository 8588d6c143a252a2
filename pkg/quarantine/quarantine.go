// Package quarantine decides what serve --quarantine does: which GPU nodes
// to take out of service because health has judged them unusable for long
// enough, which of its own to bring back, and when to stop acting at all.
// It is pure: the verdicts' history, the ledger of who holds each node, the
// fuse, the watch's certainty and the settings come in; actions come out.
// The actor (pkg/quarantine/actor) carries them out, or in dry-run only
// says them.
//
// An actor that is wrong once gets switched off for good, so the rules are
// mostly what it never does:
//   - it never touches a node someone else took out of service (cordoned,
//     or tainted against work: the ledger names who), nor one in a driver
//     upgrade (nvidia.com/gpu-driver-upgrade-state set and not upgrade-done);
//   - it only ever lifts what it put (its record on the node), and never a
//     node another actor has since marked as its own, nor one in a driver
//     upgrade;
//   - it never acts on an uncertain verdict (Certainty);
//   - it never holds more than Max nodes: past it, the fuse trips, and a
//     tripped fuse stops every action until a person resets it;
//   - it never quarantines more than Rate nodes a minute.
package quarantine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
)

// The modes of serve --quarantine.
const (
	Off    = "off"
	DryRun = "dry-run"
	On     = "on"
)

// Modes are every mode, for the flag's check.
var Modes = []string{Off, DryRun, On}

// Settings are serve's flags.
type Settings struct {
	// After is how long a node must have been unusable before it is
	// quarantined: a restart of an operand must not flap a node.
	After time.Duration
	// ReleaseAfter is how long a quarantined node must have been usable
	// again before it is released.
	ReleaseAfter time.Duration
	// Max is how many nodes may be quarantined at once; 0: DefaultMax of
	// the GPU nodes.
	Max int
	// Rate is how many nodes may be quarantined in a minute.
	Rate int
}

// The defaults of serve's flags.
const (
	DefaultAfter        = 2 * time.Minute
	DefaultReleaseAfter = time.Minute
	DefaultRate         = 1
	// DefaultMaxPercent of the GPU nodes, at least one, is the default Max.
	DefaultMaxPercent = 10
)

// MaxFor is the settings' Max, or the default for this many GPU nodes.
func (s Settings) MaxFor(gpuNodes int) int {
	if s.Max > 0 {
		return s.Max
	}
	return max(1, gpuNodes*DefaultMaxPercent/100)
}

// Node is what the decision needs of one GPU node.
type Node struct {
	Name   string
	Usable bool
	// Code and Operand are health's root cause while unusable.
	Code, Operand string
	// Since is when the node's verdict last turned to what it is (usable
	// or not), as the actor saw it: at the latest the first verdict it saw.
	Since time.Time
	// Held is the ledger's entry: who took the node out of service; nil
	// while it is in service.
	Held *ledger.Entry
	// Recorded: gpuops's record is on the node. Without gpuops's cordon
	// (Held by someone else, or in service) it is stale: someone lifted
	// the quarantine, and a record left behind would make a later cordon
	// of theirs look like gpuops's.
	Recorded bool
	// Marked is the actor, other than gpuops, whose mark the node bears
	// (ledger.Marked): even under gpuops's own quarantine, a node another
	// actor has marked is no longer gpuops's alone to lift.
	Marked string
	// UpgradeState is the node's nvidia.com/gpu-driver-upgrade-state.
	UpgradeState string
}

// Of is what a decision needs of a GPU node's health verdict, the node
// named, seen at since: usable or its root cause, who holds it, and gpuops's marks. A
// node that is full, not broken (a note, health.GPUsAllInUse) is usable:
// never quarantined.
func Of(name string, h *health.Node, since time.Time) Node {
	n := Node{Name: name, Usable: h.Usable, Held: h.OutOfService, Recorded: h.Marks.Recorded, Marked: h.Marks.Other, Since: since}
	if h.Cause != nil {
		n.Code, n.Operand = h.Cause.Code, h.Cause.Operand
	}
	return n
}

// Idle reports whether the node comes to nothing in a decision: usable, in
// service and without gpuops's record, as most of a fleet is.
func (n Node) Idle() bool { return n.Usable && n.Held == nil && !n.Recorded }

// Ours reports whether gpuops's quarantine holds the node.
func (n Node) Ours() bool { return n.Held != nil && n.Held.Actor == ledger.Gpuops }

// InUpgrade reports whether the node is in a driver upgrade: a state label
// set and not upgrade-done. The upgrade controller cordons, drains and
// uncordons it as it goes, and counts every cordon against its budget.
func (n Node) InUpgrade() bool {
	return n.UpgradeState != "" && n.UpgradeState != operand.UpgradeDone
}

// Fuse is the quarantine's circuit breaker, kept in the cluster (a
// ConfigMap) so that a restarted or replaced serve finds it tripped.
type Fuse struct {
	Tripped bool      `json:"tripped"`
	Since   time.Time `json:"since,omitzero"`
	Reason  string    `json:"reason,omitempty"`
}

// Held is one node gpuops's quarantine holds, as gpuops quarantine status
// lists it.
type Held struct {
	Node  string    `json:"node"`
	Cause string    `json:"cause"`
	Since time.Time `json:"since"`
}

// State is what gpuops quarantine status says: the fuse and the nodes held.
type State struct {
	Fuse  Fuse   `json:"fuse"`
	Nodes []Held `json:"nodes"`
}

// Certainty says whether the verdicts are the cluster's as it is: every
// watch synced, none forbidden, no list or watch failed lately.
type Certainty struct {
	// Unsynced are the watched resources whose first list has not come.
	Unsynced []string
	// Forbidden are the resources the verdicts go without (not watched:
	// the user may not list them).
	Forbidden []string
	// LastFailure is when a list, a watch or a read of the operator's
	// objects last failed; zero if none did.
	LastFailure time.Time
}

// Quiet is how long after the last failed list or watch the verdicts stay
// uncertain: the informers relist within seconds of the API server's
// return, and a verdict of before the relist may be stale.
const Quiet = 15 * time.Second

// Uncertain says why the verdicts cannot be acted on now; "" when they can.
func (c Certainty) Uncertain(now time.Time) string {
	switch {
	case len(c.Unsynced) > 0:
		return "not synced: " + strings.Join(c.Unsynced, ", ")
	case len(c.Forbidden) > 0:
		return "not watched (forbidden): " + strings.Join(c.Forbidden, ", ")
	case !c.LastFailure.IsZero() && now.Before(c.LastFailure.Add(Quiet)):
		return "a list or watch failed at " + c.LastFailure.UTC().Format(time.RFC3339)
	}
	return ""
}

// since is when a verdict seen at since counts from: never before the
// watch came back from its last failure, since a verdict that spans a
// failure may have missed a change.
func (c Certainty) since(since time.Time) time.Time {
	if c.LastFailure.IsZero() {
		return since
	}
	return maxTime(since, c.LastFailure.Add(Quiet))
}

// Input is everything a decision is made of.
type Input struct {
	Now time.Time
	// Nodes are the GPU nodes a decision may touch: at least every one not
	// Idle. An idle node comes to nothing, and most of a fleet is idle: the
	// actor holds none of them (their number is GPUNodes).
	Nodes []Node
	// GPUNodes is how many GPU nodes there are: the default max is a share.
	GPUNodes int
	Settings Settings
	Fuse     Fuse
	Certain  Certainty
}

// Action is one node to quarantine, and why.
type Action struct {
	Node, Code, Operand string
}

// Release is one of gpuops's nodes to bring back. Uncordon is false when
// the node must stay cordoned for another actor who has marked it: then only
// gpuops's record is taken off.
type Release struct {
	Node     string
	Uncordon bool
}

// Hold is an unusable node left in service, or one of gpuops's kept, and
// why.
type Hold struct {
	Node, Reason string
}

// The reasons a node is held.
const (
	HeldByOther = "held-by-other" // someone else took it out of service
	InUpgrade   = "in-driver-upgrade"
	NotYet      = "not-yet"   // not unusable (or usable again) for long enough
	NotReady    = "not-ready" // the kubelet's: its taints keep work off already
	RateLimited = "rate"
	AtMax       = "max"
	FuseTripped = "fuse-tripped"
	Uncertain   = "uncertain"
)

// Decision is what to do now.
type Decision struct {
	Quarantine []Action
	Release    []Release
	Held       []Hold
	// Forget are the nodes whose stale record (Node.Recorded) to take off;
	// nothing else of them is touched.
	Forget []string
	// Trip, when set, is why the fuse trips now: more nodes are due than
	// Max allows. The nodes within Max are quarantined first.
	Trip string
	// Owned are the nodes gpuops's quarantine holds before the actions;
	// Max the limit in force.
	Owned []string
	Max   int
	// Uncertain says why nothing is done; "" when the verdicts are certain.
	Uncertain string
}

// Decide decides what to do now.
func Decide(in Input) Decision {
	d := Decision{Max: in.Settings.MaxFor(in.GPUNodes)}
	// An idle node comes to nothing below: only the others are sorted, by
	// reference.
	var nodes []*Node
	for i := range in.Nodes {
		if n := &in.Nodes[i]; !n.Idle() {
			nodes = append(nodes, n)
		}
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return judge.NaturalCompare(a.Name, b.Name) })
	recent := 0
	for _, n := range nodes {
		if n.Ours() {
			d.Owned = append(d.Owned, n.Name)
			if n.Held.Since != nil && in.Now.Sub(*n.Held.Since) < time.Minute {
				recent++
			}
		}
	}
	hold := func(n *Node, reason string) { d.Held = append(d.Held, Hold{Node: n.Name, Reason: reason}) }
	stop := ""
	if d.Uncertain = in.Certain.Uncertain(in.Now); d.Uncertain != "" {
		stop = Uncertain
	} else if in.Fuse.Tripped {
		stop = FuseTripped
	}
	var due []*Node
	for _, n := range nodes {
		since := in.Certain.since(n.Since)
		if n.Recorded && !n.Ours() && stop == "" {
			d.Forget = append(d.Forget, n.Name)
		}
		switch {
		case n.Ours() && stop != "":
			hold(n, stop)
		case n.Ours() && n.InUpgrade():
			hold(n, InUpgrade) // the controller drives the cordon now
		case n.Ours() && !n.Usable:
		case n.Ours() && in.Now.Before(since.Add(in.Settings.ReleaseAfter)):
			hold(n, NotYet)
		case n.Ours():
			d.Release = append(d.Release, Release{Node: n.Name, Uncordon: n.Marked == ""})
		case n.Usable:
		case n.Held != nil:
			hold(n, HeldByOther)
		case n.InUpgrade():
			hold(n, InUpgrade)
		case n.Code == health.NodeNotReady:
			hold(n, NotReady)
		case stop != "":
			hold(n, stop)
		case in.Now.Before(since.Add(in.Settings.After)):
			hold(n, NotYet)
		default:
			due = append(due, n)
		}
	}
	// The longest unusable first: the rate and the limit keep the worst.
	slices.SortStableFunc(due, func(a, b *Node) int { return cmp.Compare(a.Since.UnixNano(), b.Since.UnixNano()) })
	for i, n := range due {
		switch {
		case len(d.Owned)+len(d.Quarantine) >= d.Max:
			d.Trip = fmt.Sprintf("%d nodes due for quarantine, %d held already: more than --quarantine-max %d", len(due), len(d.Owned), d.Max)
			for _, rest := range due[i:] {
				hold(rest, AtMax)
			}
			return d
		case recent+len(d.Quarantine) >= in.Settings.Rate:
			hold(n, RateLimited)
		default:
			d.Quarantine = append(d.Quarantine, Action{Node: n.Name, Code: n.Code, Operand: n.Operand})
		}
	}
	return d
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
