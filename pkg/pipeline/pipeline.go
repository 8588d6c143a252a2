// Package pipeline is where every verdict gpuops gives is made. One call
// takes the options (which nodes, which roster, which rules, how long a
// pause may last, whether to say why, whether each node is usable) and a
// source — a snapshot read once (Run), or the live store's nodes (pkg/live,
// through Scope.Judge) — and returns one outcome.Result: the roster and its
// notes, each node's verdict, the fleet's and the rollout's views. Every
// command that judges a cluster (audit, order-check, matrix, summary,
// health, upgrades, report, lab, watch, serve, guard status) judges here,
// so with the same flags on the same cluster they say the same thing; a new
// judgement is one more stage of Scope.Judge.
//
// The roster default is decided here once: on a GPU Operator install the
// operands of the namespace's DaemonSets (pkg/discover), elsewhere the lab's
// five, and in both cases minus what the ClusterPolicy switches off.
//
// Beside the snapshot it reads what some judgements add: with --logs the
// tails of the failing containers' logs, for the host's fault they name
// (logs.go, logtail.go), and the GPU pods of every namespace for the
// workload's side (workloads.go: capacity, pods, why).
package pipeline

import (
	"slices"
	"sync"
	"time"

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/plan"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// DefaultStuckAfter is how long a helper's pause may last before it is a
// finding, for every command that judges pauses.
const DefaultStuckAfter = 30 * time.Minute

// The fleet view's grouping: GPU Feature Discovery's GPU model label by
// default, and the group of the nodes without it.
const (
	DefaultGroupBy = summary.DefaultGroupBy
	NoGroup        = summary.NoGroup
)

// Choice says which roster to judge with.
type Choice = discover.Choice

// Roster choices, as --discover sets them.
const (
	AutoRoster     = discover.Auto     // --discover unset: discover on a GPU Operator install
	LabRoster      = discover.Lab      // --discover=false: the lab's five
	DiscoverRoster = discover.Discover // --discover: the namespace's DaemonSets
)

// Options say what to judge. The zero value judges every node of namespace
// "" with the automatic roster and the device rule, no pause ever stuck and
// no reasons.
type Options struct {
	Namespace    string // of the operand DaemonSets and their pods
	NodeSelector string // label selector of the nodes judged; empty: all
	// Node, when set, judges that one node from a read of it and its pods
	// alone (order-check NODE): as quick on 5,000 nodes as on 3.
	Node string
	// Nodes, when set, keeps only these nodes of the read (health NODE...);
	// one that is not there is a NodeNotFoundError.
	Nodes    []string
	Roster   Choice
	AllRules bool // every rule of the start-up order, not only the device rule
	// StuckAfter is how long a helper's pause may last before it is STUCK;
	// 0: never.
	StuckAfter time.Duration
	// Explain adds the reasons: why each MISSING and STUCK, unexpected pods,
	// label warnings, the operands switched off.
	Explain bool
	// Health judges whether each node can run GPU work (pkg/health): pods
	// Ready along the start-up chain, devices advertised, the root cause.
	Health bool
	// Logs reads, with Health, the tail of each failing container's log on
	// the unusable nodes and names the host's fault it shows
	// (pkg/signature) as the node's hint; Run reads them, the live
	// tracker through its own reader (LogReader).
	Logs bool
	// Upgrades judges the driver upgrade as the operator's upgrade
	// controller walks it (pkg/upgrade): per node done, in progress,
	// waiting for the budget, stuck, failed and why, left cordoned.
	Upgrades bool
	// LabelsOnly judges the deploy labels alone, as the guard does: only the
	// nodes are read, so only each verdict's LabelsBreak means anything.
	LabelsOnly bool
	// GroupBy, when set, groups the verdicts into a fleet view by the value
	// of this node label (outcome.Result.Fleet).
	GroupBy string
	// Now is the moment the judges judge as of (ages, --stuck-after): a
	// bundle's time for --from; zero, the clock's.
	Now time.Time
	// Workloads keeps, in the live tracker, the workload side too (serve
	// --workloads): every GPU pod of the cluster, judged as gpuops capacity
	// and pods judge them, against nodes kept with every label (the
	// scheduler matches a pod's selectors on any).
	Workloads bool
	// Capacity, with Health, also counts where the GPUs are, as gpuops
	// capacity does (outcome.Result.Capacity): the GPU pods of every
	// namespace are read beside the snapshot.
	Capacity bool
}

// now is the moment to judge as of.
func (o Options) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// Scope is what the options and the cluster's DaemonSets and ClusterPolicy
// decide before any node is judged: the operands, the rules, what to tell
// the user about them. The live tracker keeps one until a DaemonSet changes.
// (pkg/plan is another thing: the steps of an opt-out or opt-in.)
type Scope struct {
	Options
	Roster []operand.Operand
	Rules  []operand.Rule
	Notes  []string // the reader's, then the roster's, then the operator's version
	// Operator is the operator's version and the release the judges judge
	// by; nil when none was found.
	Operator *outcome.Operator
}

// Decide makes the scope of a snapshot (of which only the namespace, the
// DaemonSets, the operator's objects and the notes are read).
func Decide(s *snapshot.Snapshot, o Options) Scope {
	r := discover.For(s, o.Roster)
	rules := []operand.Rule{operand.DeviceRule}
	if o.AllRules {
		rules = operand.RulesFor(r.Roster, operand.AllRules)
	}
	release, _ := s.Release() // the note is Operator's
	sc := Scope{Options: o, Roster: release.Roster(r.Roster), Rules: rules, Notes: slices.Concat(s.Notes, r.Notes),
		Operator: outcome.OperatorOf(s)}
	if sc.Operator != nil {
		sc.Notes = append(sc.Notes, sc.Operator.Line())
	}
	return sc
}

// Judge judges every node of the snapshot in the scope as of now: the
// verdicts, and with GroupBy the fleet view of them.
func (sc Scope) Judge(s *snapshot.Snapshot, now time.Time) (*outcome.Result, error) {
	r, s, err := sc.judgeNodes(s, now)
	if err != nil || sc.GroupBy == "" {
		return r, err
	}
	f := summary.Build(s, r.Nodes, sc.Roster, sc.Rules, sc.GroupBy)
	f.Rollout = r.Rollout
	r.Fleet = &f
	return r, nil
}

// JudgeNodes is Judge without the fleet view, which the live tracker,
// keeping each node's verdict, would throw away. It calls it with a
// snapshot of the nodes an event touched (and their pods): every node's
// verdict depends only on the node, its pods, the DaemonSets and the scope,
// so it is the verdict a whole read would give — but for the rollout's
// (see Rollout).
func (sc Scope) JudgeNodes(s *snapshot.Snapshot, now time.Time) (*outcome.Result, error) {
	r, _, err := sc.judgeNodes(s, now)
	return r, err
}

// judgeNodes is the result of the snapshot's nodes, each with its verdict,
// and the snapshot of the nodes judged.
func (sc Scope) judgeNodes(s *snapshot.Snapshot, now time.Time) (*outcome.Result, *snapshot.Snapshot, error) {
	if len(sc.Nodes) > 0 {
		kept, err := only(s, sc.Nodes)
		if err != nil {
			return nil, nil, err
		}
		s = kept
	}
	// Health is judged beside the rest, on another core: after the read,
	// the judges' time adds to the wall's, and health is half of it
	// (BenchmarkJudge5000).
	var hs []health.Node
	var healthJudged sync.WaitGroup
	if sc.Health {
		healthJudged.Go(func() { hs = health.Assess(s, sc.Roster, now, sc.StuckAfter) })
		defer healthJudged.Wait() // on an early return too
	}
	x := judge.NewIndex(s)
	orders, err := x.OrderAll(sc.Roster, sc.Rules)
	if err != nil {
		return nil, nil, err
	}
	m := x.Matrix(sc.Roster)
	audits := x.Audit(sc.Roster)
	judge.Stuck(audits, s, sc.Roster, now, sc.StuckAfter)
	r := &outcome.Result{Namespace: s.Namespace, Selector: sc.NodeSelector, Node: sc.Node, Named: sc.Node != "" || len(sc.Nodes) > 0,
		Explain: sc.Explain, Roster: sc.Roster, Notes: sc.Notes, Operator: sc.Operator, Taken: now, TotalPods: m.TotalPods,
		Nodes: make([]verdict.Verdict, len(audits)), Disabled: explain.DisabledOf(sc.Roster)}
	at := map[string]*verdict.Verdict{}
	for i, a := range audits { // audits, orders and rows share the natural node order
		r.Nodes[i] = verdict.Verdict{Node: a.Node, Audit: a, Order: orders[i], Row: m.Rows[i]}
		at[a.Node] = &r.Nodes[i]
	}
	if sc.LabelsOnly { // the guard's judgement of the labels alone
		for _, n := range s.Nodes {
			for _, b := range plan.Broken(n.Labels, operand.AllRules) {
				at[n.Name].LabelsBreak = append(at[n.Name].LabelsBreak, b.Finding)
			}
		}
	}
	if sc.Explain {
		x := explain.Explain(s, sc.Roster, audits, explain.Clock{Now: now, StuckAfter: sc.StuckAfter})
		// A node with something to explain gets a report of its own; one
		// with nothing keeps none (verdict.Why): no report is shared.
		own := func(node string) *explain.Report {
			if v := at[node]; v.Explain == nil {
				mine := explain.Empty()
				v.Explain = &mine
			}
			return at[node].Explain
		}
		for _, m := range x.Missing {
			own(m.Node).Missing = append(own(m.Node).Missing, m)
		}
		for _, w := range x.Warnings {
			own(w.Node).Warnings = append(own(w.Node).Warnings, w)
		}
		for _, u := range x.Unexpected {
			own(u.Node).Unexpected = append(own(u.Node).Unexpected, u)
		}
	}
	healthJudged.Wait()
	if sc.Health {
		for i := range hs {
			at[hs[i].Node].Health = &hs[i]
		}
	}
	if sc.Upgrades {
		ro := sc.Rollout(s, now)
		r.Rollout = &ro
		for i := range ro.Nodes {
			at[ro.Nodes[i].Node].Upgrade = &ro.Nodes[i]
		}
	}
	if sc.GroupBy != "" {
		for _, n := range s.Nodes {
			at[n.Name].Group = summary.GroupOf(n.Labels, sc.GroupBy)
		}
	}
	return r, s, nil
}

// Rollout judges the driver upgrade of the snapshot's nodes as of now. It
// is the one judgement that spans nodes (a node waits for the budget the
// others use), so the live tracker makes it from every node it holds, not
// only from those an event touched.
func (sc Scope) Rollout(s *snapshot.Snapshot, now time.Time) upgrade.Rollout {
	return upgrade.Assess(s, sc.Roster, now, sc.StuckAfter)
}

// only is the snapshot with just the named nodes.
func only(s *snapshot.Snapshot, names []string) (*snapshot.Snapshot, error) {
	kept := *s
	kept.Nodes = nil
	for _, name := range names {
		i := slices.IndexFunc(s.Nodes, func(n snapshot.Node) bool { return n.Name == name })
		if i < 0 {
			return nil, &judge.NodeNotFoundError{Node: name}
		}
		kept.Nodes = append(kept.Nodes, s.Nodes[i])
	}
	return &kept, nil
}
