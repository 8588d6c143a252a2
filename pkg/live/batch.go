package live

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// readOperator reads the ClusterPolicy, NVIDIADrivers and the operator's
// version again, and for
// health the sharing and MIG configs it names; on a failure the hooks hear
// it and the last ones read stay.
func (t *Tracker) readOperator(ctx context.Context) error {
	s := snapshot.Snapshot{Namespace: t.opts.Namespace}
	if err := read.Operator(ctx, t.client, &s); err != nil {
		t.watchFailed(ClusterPolicies, err)
		return err
	}
	if t.opts.ReadOptions().Offers {
		if err := read.Offers(ctx, t.client, t.opts.Namespace, &s); err != nil {
			t.watchFailed(ConfigMaps, err)
			return err
		}
	}
	t.operator = s
	return nil
}

// rescope decides the roster and rules again from the DaemonSets and the
// operator's objects, as the one-shot commands do.
func (t *Tracker) rescope() {
	s := t.operator
	s.DaemonSets = nil
	for _, o := range t.store(DaemonSets).List() {
		s.DaemonSets = append(s.DaemonSets, o.(*stored[snapshot.DaemonSet]).Of)
	}
	slices.SortFunc(s.DaemonSets, func(a, b snapshot.DaemonSet) int { return strings.Compare(a.Name, b.Name) })
	t.scope = pipeline.Decide(&s, t.opts.Options)
	t.operator.DaemonSets = s.DaemonSets
}

func (t *Tracker) nodeStore() cache.Store { return t.store(Nodes) }

func (t *Tracker) podIndex() cache.Indexer { return t.store(Pods) }

// revisions are the latest template hash of each DaemonSet; nil when not
// watched.
func (t *Tracker) revisions() map[string]string {
	st := t.store(ControllerRevisions)
	if st == nil {
		return nil
	}
	var revs []snapshot.Revision
	for _, o := range st.List() {
		revs = append(revs, o.(*stored[snapshot.Revision]).Of)
	}
	return snapshot.LatestRevisions(revs)
}

// addEvents adds the node's upgrade Events to s, when watched.
func (t *Tracker) addEvents(s *snapshot.Snapshot, node string) {
	st := t.store(UpgradeEvents)
	if st == nil {
		return
	}
	evs, _ := st.ByIndex(nodeIndex, node)
	for _, e := range evs {
		snapshot.KeepEvent(s.UpgradeEvents, node, e.(*stored[upgradeEvent]).Of.Event)
	}
}

// judge judges the named nodes again and tells the hooks what changed.
// force makes the rollout's pass over every node (the first batch, a new
// scope). An error is the pipeline's: the scope's rules and roster disagree.
func (t *Tracker) judge(names []string, initial, force bool) error {
	began := time.Now()
	slices.SortFunc(names, judge.NaturalCompare)
	b := verdict.Batch{Initial: initial, Judged: len(names), Roster: t.scope.Roster, Rules: t.scope.Rules}
	after, err := t.verdictsOf(names, began)
	if err != nil {
		return err
	}
	if t.opts.Upgrades {
		judged := len(after)
		b.Rollout = t.rollout(names, after, began, force)
		if len(after) > judged { // nodes whose part in the rollout changed
			for name := range after {
				names = append(names, name)
			}
			slices.SortFunc(names, judge.NaturalCompare)
			names = slices.Compact(names)
		}
	}
	for _, name := range names {
		before, now := t.verdicts[name], after[name]
		if reflect.DeepEqual(before, now) {
			continue
		}
		if now == nil {
			delete(t.verdicts, name)
		} else {
			t.verdicts[name] = now
		}
		b.Changes = append(b.Changes, verdict.Change{Before: before, After: now})
	}
	b.Time = time.Now()
	b.Took = b.Time.Sub(began)
	for _, h := range t.hooks {
		if h.Judged != nil {
			h.Judged(b)
		}
	}
	return nil
}

// rolloutRefresh bounds how long the rollout is kept while none of its
// inputs change: its verdicts also move with time alone (stuck past
// --stuck-after, validation timed out, "in <state> for <time>").
const rolloutRefresh = 15 * time.Second

// rollout judges the driver upgrade of every node held, and sets each
// node's part in it into after: a node's upgrade verdict may change with
// another's (a cordon spends the budget it waits for), so a node not judged
// again gets a new verdict in after when its part changed. That is a pass
// over every node and its driver pods, so it is made only when a judged
// node's part of its inputs changed (upgrade.Inputs, its driver and
// validator pods, its upgrade Event), when forced (the first batch, a new
// scope), or rolloutRefresh after the last; otherwise the last rollout
// stands. Under a churn of deploy labels the pass took most of each
// batch's judging (docs/scale.md, "`serve` all day").
func (t *Tracker) rollout(judged []string, after map[string]*verdict.Verdict, now time.Time, force bool) *upgrade.Rollout {
	reads := upgrade.Reads(t.scope.Roster)
	if !force && t.rolled != nil && now.Sub(t.rolledAt) < rolloutRefresh && !t.rolloutInputsChanged(judged, reads) {
		for name, v := range after {
			v.Upgrade = t.lastPart(name)
		}
		return t.rolled
	}
	s := t.base()
	ins := make(map[string]rolloutIn, len(t.rolloutIns))
	for _, name := range t.nodeStore().ListKeys() {
		in, inputs, found := t.rolloutInputs(name, reads)
		if !found {
			continue
		}
		ins[name] = in
		s.Nodes = append(s.Nodes, inputs)
		for _, o := range in.objs {
			if p, ok := o.(*stored[snapshot.Pod]); ok {
				s.Pods = append(s.Pods, p.Of)
			}
		}
		t.addEvents(s, name)
	}
	ro := t.scope.Rollout(s, now)
	// Each node's part is its own, and the last one stays while it reads
	// the same: a verdict that pointed into ro.Nodes kept that pass's every
	// part alive until the node was judged again, an array a pass, and the
	// heap grew under churn (docs/scale.md, "`serve` all day").
	part := make(map[string]*upgrade.Node, len(ro.Nodes))
	for _, n := range ro.Nodes {
		if last := t.lastPart(n.Node); last != nil && reflect.DeepEqual(*last, n) {
			part[n.Node] = last
			continue
		}
		part[n.Node] = &n
	}
	for name, v := range after {
		v.Upgrade = part[name]
	}
	wasJudged := make(map[string]bool, len(judged))
	for _, n := range judged {
		wasJudged[n] = true
	}
	for name, v := range t.verdicts {
		// A node judged and not in after is gone: it keeps no part.
		if !wasJudged[name] && !reflect.DeepEqual(v.Upgrade, part[name]) {
			again := *v
			again.Upgrade = part[name]
			after[name] = &again
		}
	}
	// The pass's Nodes are the parts again, held twice if kept: what is kept of
	// the pass, and published in the batch, is its policy, budget and counts.
	ro.Nodes = nil
	t.rolled, t.rolledAt, t.rolloutIns = &ro, now, ins
	return &ro
}

// lastPart is the node's part in the last rollout: its verdict's, which
// holds it (a map of the parts beside the verdicts would hold them
// twice).
func (t *Tracker) lastPart(node string) *upgrade.Node {
	if v := t.verdicts[node]; v != nil {
		return v.Upgrade
	}
	return nil
}

// rolloutIn is what the rollout read of a node at its last pass: the digest of
// the node's Inputs, and its driver and validator pods and upgrade Event as the
// stores held them (one an informer has replaced since counts as changed). The
// Inputs themselves, held for every node, were many times the digest's eight
// bytes (docs/scale.md, "`serve` all day"); a digest colliding would only keep
// the last rollout until rolloutRefresh.
type rolloutIn struct {
	node uint64
	objs []any // the pods, then the Events: one slice, 24 bytes less a node
}

var inputsSeed = maphash.MakeSeed()

// digest digests a node's upgrade.Inputs, encoded as JSON (maps in key
// order, so equal Inputs digest alike).
func digest(inputs *snapshot.Node) uint64 {
	var h maphash.Hash
	h.SetSeed(inputsSeed)
	_ = json.NewEncoder(&h).Encode(inputs) // a hash takes every write
	return h.Sum64()
}

// rolloutInputs are what the rollout reads of the named node now, and the
// node's Inputs; false when the node is gone.
func (t *Tracker) rolloutInputs(name string, reads func(*snapshot.Pod) (bool, bool)) (rolloutIn, snapshot.Node, bool) {
	obj, found, _ := t.nodeStore().GetByKey(name)
	if !found {
		return rolloutIn{}, snapshot.Node{}, false
	}
	inputs := upgrade.Inputs(&obj.(*stored[snapshot.Node]).Of)
	in := rolloutIn{node: digest(&inputs)}
	pods, _ := t.podIndex().ByIndex(nodeIndex, name)
	for _, p := range pods {
		if _, read := reads(&p.(*stored[snapshot.Pod]).Of); read {
			in.objs = append(in.objs, p)
		}
	}
	if st := t.store(UpgradeEvents); st != nil {
		evs, _ := st.ByIndex(nodeIndex, name)
		in.objs = append(in.objs, evs...)
	}
	return in, inputs, true
}

// rolloutInputsChanged reports whether any judged node's rollout inputs
// differ from the last pass's, the node come or gone included.
func (t *Tracker) rolloutInputsChanged(judged []string, reads func(*snapshot.Pod) (bool, bool)) bool {
	for _, name := range judged {
		in, _, found := t.rolloutInputs(name, reads)
		was, held := t.rolloutIns[name]
		if found != held || found && !sameRolloutIn(in, was) {
			return true
		}
	}
	return false
}

func sameRolloutIn(a, b rolloutIn) bool {
	same := func(x, y []any) bool {
		return len(x) == len(y) && !slices.ContainsFunc(x, func(o any) bool { return !slices.Contains(y, o) })
	}
	return a.node == b.node && same(a.objs, b.objs)
}

// base is a snapshot of what every verdict reads besides nodes and pods.
func (t *Tracker) base() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: t.opts.Namespace, DaemonSets: t.operator.DaemonSets, Policy: t.operator.Policy, NVIDIADrivers: t.operator.NVIDIADrivers,
		OperatorVersion: t.operator.OperatorVersion, CRDFields: t.operator.CRDFields, Offers: t.operator.Offers}
	if t.opts.Upgrades {
		s.Revisions, s.UpgradeEvents = t.revisions(), map[string]snapshot.Event{}
	}
	return s
}

// judgeChunk is how many nodes verdictsOf judges from one snapshot. A
// node's verdict reads its own objects only, so a batch of every node (the
// first, a new scope) is judged a chunk at a time: each chunk's snapshot and
// the judge's working state are garbage before the next, not all held at
// once beside the stores.
const judgeChunk = 500

// verdictsOf judges the named nodes through the pipeline, from snapshots of
// them, their pods and the DaemonSets, judgeChunk nodes at a time; a node
// gone has no verdict. A pause that is not stuck yet is queued again for
// when it will be.
func (t *Tracker) verdictsOf(names []string, now time.Time) (map[string]*verdict.Verdict, error) {
	out := make(map[string]*verdict.Verdict, len(names))
	for chunk := range slices.Chunk(names, judgeChunk) {
		if err := t.judgeInto(out, chunk, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// judgeInto sets the named nodes' verdicts into out.
func (t *Tracker) judgeInto(out map[string]*verdict.Verdict, names []string, now time.Time) error {
	s := t.base()
	s.DevicePools = t.devicePools(names)
	for _, name := range names {
		obj, found, _ := t.nodeStore().GetByKey(name)
		if !found {
			continue
		}
		n := obj.(*stored[snapshot.Node]).Of
		s.Nodes = append(s.Nodes, n)
		if s.UpgradeEvents != nil {
			t.addEvents(s, name)
		}
		pods, _ := t.podIndex().ByIndex(nodeIndex, name)
		for _, p := range pods {
			s.Pods = append(s.Pods, p.(*stored[snapshot.Pod]).Of)
		}
		if after := t.opts.StuckAfter; after > 0 {
			for _, p := range judge.Pauses(n, t.scope.Roster) {
				if !p.Since.IsZero() && !p.StuckAt(now, after) {
					t.queue.AddAfter(judgeNode(name), p.Since.Add(after).Sub(now)+time.Second)
				}
			}
		}
	}
	if t.opts.ReadOptions().Kubelet {
		t.addKubelet(t.ctx, s)
	}
	// The rollout spans every node held, not a chunk: it is made once a
	// batch (rollout), so the chunks leave it out.
	sc := t.scope
	sc.Upgrades = false
	if t.opts.Logs != nil {
		t.opts.Logs.Logged(s)
	}
	r, err := sc.JudgeNodes(s, now)
	if err != nil {
		return err
	}
	if t.opts.Logs != nil {
		t.opts.Logs.Hints(s, r, func(node string) { t.mark(judgeNode(node)) })
	}
	for i := range r.Nodes {
		// A verdict, and its health, are their own allocations: pointing
		// into the batch's arrays kept every verdict of the batch alive
		// until each of its nodes had been judged again.
		v := r.Nodes[i]
		if v.Health != nil {
			h := *v.Health
			v.Health = &h
		}
		out[v.Node] = &v
	}
	return nil
}
