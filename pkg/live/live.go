// Package live keeps the verdict of audit, order-check and matrix current:
// informers on the nodes, the namespace's pods and its DaemonSets, trimmed
// to the judges' fields as they arrive; after the first full sync, every
// event queues the nodes it touches, and only those are judged again, by
// the one pipeline the one-shot commands use (pkg/pipeline), on a snapshot
// of those nodes. The plan (roster, rules) is the pipeline's too, made from
// the DaemonSets and the ClusterPolicy, and made again when a DaemonSet
// changes.
package live

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Options say what to judge: the pipeline's options, as the one-shot
// commands' flags set them (Node and GroupBy are not used).
type Options struct {
	pipeline.Options
	// SyncTimeout, when set, bounds the wait for the first full sync, and a
	// failed list or watch before it ends Run at once: a command a person
	// runs. Zero waits for ever and retries, as a server does.
	SyncTimeout time.Duration
}

// Hooks are told what the judge does. Judged is called from Run's own
// goroutine, batch after batch; WatchFailed from the informers' goroutines.
type Hooks struct {
	Judged      func(verdict.Batch)
	WatchFailed func(resource string, err error) // the informer retries on its own
	// Skipped: a resource the judge can go without is not watched, since
	// the user may not list it (err says so).
	Skipped func(resource string, err error)
}

// Judge is the live judge of one cluster.
type Judge struct {
	opts   Options
	client kubernetes.Interface
	// resources change only in Run's goroutine (a forbidden one left, the
	// node informer started or replaced), under mu for Synced.
	mu        sync.Mutex
	resources []resource
	hooks     []Hooks
	// queue holds the names of the nodes to judge again: a node queued
	// twice before it is judged is judged once, and a pause is queued
	// again for the moment it becomes stuck (AddAfter).
	queue  workqueue.TypedDelayingInterface[string]
	ready  atomic.Bool
	failed chan error // the first watch error, for SyncTimeout

	// Owned by the goroutine of Run.
	wg       sync.WaitGroup  // the informers' goroutines
	labels   pipeline.Labels // the node labels the node informer keeps
	verdicts map[string]*verdict.Verdict
	operator snapshot.Snapshot // the ClusterPolicy and NVIDIADrivers, with the reader's notes
	plan     pipeline.Scope
}

// resource is one watched kind of object.
type resource struct {
	name     string
	informer cache.SharedIndexInformer
	synced   cache.DoneChecker
	stop     context.CancelFunc // set once it runs
	// probe, for a resource the judge can go without, lists one object:
	// if the user may not, the resource is not watched (an informer would
	// retry for ever and never sync).
	probe func(context.Context) error
}

// daemonSetsChanged is queued, in place of a node name, when a DaemonSet
// changes: the roster and every node's reasons may change with it. No node
// is named that way (a name is a DNS subdomain).
const daemonSetsChanged = "\x00daemonsets"

// New sets up the informers; nothing is read before Run. Each object is
// trimmed to what the judges read as it arrives. The informers list with a
// streaming watch (WatchList) where the server offers it. The node informer
// is set up in Run, once the DaemonSets are known (watchNodes).
func New(client kubernetes.Interface, opts Options) (*Judge, error) {
	j := &Judge{opts: opts, client: client, queue: workqueue.NewTypedDelayingQueue[string](), failed: make(chan error, 1), verdicts: map[string]*verdict.Verdict{}}
	pods := coreinformers.NewFilteredPodInformer(client, opts.Namespace, 0, cache.Indexers{nodeIndex: podNode}, nil)
	// The DaemonSets are few; the roster and the reasons read them.
	dss := appsinformers.NewFilteredDaemonSetInformer(client, opts.Namespace, 0, cache.Indexers{}, nil)
	if err := j.add("pods", pods, trimPod, podEvents(j.mark), nil); err != nil {
		return nil, err
	}
	if err := j.add("daemonsets", dss, trimDaemonSet, daemonSetEvents(j.mark), nil); err != nil {
		return nil, err
	}
	if opts.Upgrades { // what the one-shot read's Upgrades lists, watched
		revs := appsinformers.NewFilteredControllerRevisionInformer(client, opts.Namespace, 0, cache.Indexers{}, nil)
		err := j.add("controllerrevisions", revs, trimRevision, revisionEvents(j.mark), func(ctx context.Context) error {
			_, err := client.AppsV1().ControllerRevisions(opts.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		})
		if err != nil {
			return nil, err
		}
		selectEvents := func(o *metav1.ListOptions) { o.FieldSelector = read.UpgradeEvents }
		events := coreinformers.NewFilteredEventInformer(client, metav1.NamespaceDefault, 0, cache.Indexers{nodeIndex: eventNode}, selectEvents)
		err = j.add("events", events, trimEvent, upgradeEvents(j.mark), func(ctx context.Context) error {
			o := metav1.ListOptions{Limit: 1}
			selectEvents(&o)
			_, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, o)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return j, nil
}

// mark queues the named nodes to be judged again.
func (j *Judge) mark(names ...string) {
	for _, n := range names {
		j.queue.Add(n)
	}
}

// NewFor sets up the live judge on the clients of a connection. When a
// person waits (watch), a cluster that does not answer within the
// connection's --request-timeout is an error, as for audit; an exporter
// (serve) waits on. The watches run without that timeout, which would cut
// every long watch short.
func NewFor(cl *kube.Clients, opts Options, personWaits bool) (*Judge, error) {
	if personWaits {
		opts.SyncTimeout = cl.Config.Timeout
	}
	client, err := cl.ForWatching()
	if err != nil {
		return nil, err
	}
	return New(client, opts)
}

func (j *Judge) add(name string, inf cache.SharedIndexInformer, trim cache.TransformFunc, h cache.ResourceEventHandler, probe func(context.Context) error) error {
	r, err := j.watched(name, inf, trim, h, probe)
	if err == nil {
		j.resources = append(j.resources, r)
	}
	return err
}

// watched readies an informer: trimmed, its errors told, its events marking
// nodes.
func (j *Judge) watched(name string, inf cache.SharedIndexInformer, trim cache.TransformFunc, h cache.ResourceEventHandler, probe func(context.Context) error) (resource, error) {
	if err := inf.SetTransform(trim); err != nil {
		return resource{}, err
	}
	err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		j.watchFailed(name, err)
	})
	if err != nil {
		return resource{}, err
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return resource{}, err
	}
	return resource{name: name, informer: inf, synced: reg.HasSyncedChecker(), probe: probe}, nil
}

// start runs the informer until ctx ends or it is stopped.
func (j *Judge) start(ctx context.Context, r *resource) {
	ctx, r.stop = context.WithCancel(ctx)
	j.wg.Go(func() { r.informer.RunWithContext(ctx) })
}

// watchNodes starts a node informer that keeps the labels the verdicts read
// given the DaemonSets held, and waits for its first list, when the one
// running (if any) does not keep them all: a DaemonSet that selects on a new
// label needs the nodes read again, which is rare. On success the new
// informer replaces the old, which stops. The wait ends at deadline (see
// waitForSync).
func (j *Judge) watchNodes(ctx context.Context, deadline time.Time) error {
	want := j.opts.LabelsRead(j.operator.DaemonSets)
	old := slices.IndexFunc(j.resources, func(r resource) bool { return r.name == "nodes" })
	if old >= 0 && j.labels.Covers(want) {
		return nil
	}
	inf := coreinformers.NewFilteredNodeInformer(j.client, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = j.opts.NodeSelector })
	r, err := j.watched("nodes", inf, trimNode(j.opts.ReadOptions(), want), nodeEvents(j.mark), nil)
	if err != nil {
		return err
	}
	j.start(ctx, &r)
	if err := j.waitForSync(ctx, deadline, r); err != nil || ctx.Err() != nil {
		r.stop()
		return err
	}
	j.mu.Lock()
	if old >= 0 {
		j.resources[old].stop()
		j.resources[old] = r
	} else {
		j.resources = append(j.resources, r)
	}
	j.mu.Unlock()
	j.labels = want
	return nil
}

// leaveForbidden stops watching the resources the judge can go without
// that the user may not list, and tells the hooks.
func (j *Judge) leaveForbidden(ctx context.Context) {
	forbidden := map[string]bool{}
	for _, r := range j.resources {
		if r.probe == nil {
			continue
		}
		if err := r.probe(ctx); apierrors.IsForbidden(err) {
			forbidden[r.name] = true
			for _, h := range j.hooks {
				if h.Skipped != nil {
					h.Skipped(r.name, err)
				}
			}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.resources = slices.DeleteFunc(j.resources, func(r resource) bool { return forbidden[r.name] })
}

// store is the store of the named resource; nil when it is not watched.
func (j *Judge) store(name string) cache.Indexer {
	for _, r := range j.resources {
		if r.name == name {
			return r.informer.GetIndexer()
		}
	}
	return nil
}

// watchFailed tells SyncTimeout's wait and the hooks of a failed list or
// watch (or read of the operator's objects).
func (j *Judge) watchFailed(resource string, err error) {
	select {
	case j.failed <- fmt.Errorf("watch %s: %w", resource, err):
	default:
	}
	for _, h := range j.hooks {
		if h.WatchFailed != nil {
			h.WatchFailed(resource, err)
		}
	}
}

// Observe adds hooks; call it before Run.
func (j *Judge) Observe(h Hooks) { j.hooks = append(j.hooks, h) }

// Ready reports whether the first full verdict has been given.
func (j *Judge) Ready() bool { return j.ready.Load() }

// Synced reports, per watched resource, whether its informer has
// delivered its initial list; the nodes are false until their informer
// runs.
func (j *Judge) Synced() map[string]bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[string]bool{"nodes": false}
	for _, r := range j.resources {
		out[r.name] = r.informer.HasSynced()
	}
	return out
}

// Run watches and judges until ctx ends, then returns nil once the
// informers have stopped; an error only if the first sync fails (see
// Options.SyncTimeout). The first batch judges every node; it comes once all
// informers have synced, so the verdict is never made from half a list.
func (j *Judge) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer j.wg.Wait()
	defer stop()
	defer j.queue.ShutDown()
	j.leaveForbidden(ctx)
	for i := range j.resources {
		j.start(ctx, &j.resources[i])
	}
	// SyncTimeout bounds the whole first sync, the nodes' list included.
	deadline := j.syncDeadline()
	if err := j.waitForSync(ctx, deadline, j.resources...); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := j.readOperator(ctx); err != nil && j.opts.SyncTimeout > 0 {
		return err
	}
	j.replan()
	if err := j.watchNodes(ctx, deadline); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	// The first batch judges every node: what the informers queued on the
	// way is in it.
	for _, n := range j.take(false) {
		j.queue.Done(n)
	}
	j.judge(j.nodeStore().ListKeys(), true)
	j.ready.Store(true)
	context.AfterFunc(ctx, j.queue.ShutDown)
	for {
		got := j.take(true)
		if got == nil {
			return nil
		}
		names := slices.Clone(got)
		if slices.Contains(names, daemonSetsChanged) {
			// The operator renders its DaemonSets from the ClusterPolicy: a
			// change of one is when the policy may have changed too.
			_ = j.readOperator(ctx)
			j.replan()
			if err := j.watchNodes(ctx, j.syncDeadline()); err != nil {
				// The old informer keeps on: the reasons may miss the new
				// selector label until the next DaemonSet change.
				j.watchFailed("nodes", err)
			}
			names = slices.DeleteFunc(names, func(n string) bool { return n == daemonSetsChanged })
			names = append(names, j.nodeStore().ListKeys()...)
			for n := range j.verdicts { // gone nodes too
				names = append(names, n)
			}
			slices.Sort(names)
			names = slices.Compact(names)
		}
		j.judge(names, false)
		for _, n := range got { // only what Get handed out: Done queues a dirty item again
			j.queue.Done(n)
		}
	}
}

// take gets what the queue holds: with wait, it first waits for one name
// (nil once the queue shuts down); then it takes every name queued so far,
// so that a burst of events makes one batch. The caller marks them Done.
func (j *Judge) take(wait bool) []string {
	var names []string
	if wait {
		n, shutdown := j.queue.Get()
		if shutdown {
			return nil
		}
		names = append(names, n)
	}
	for j.queue.Len() > 0 {
		n, shutdown := j.queue.Get()
		if shutdown {
			break
		}
		names = append(names, n)
	}
	return names
}

// syncDeadline is when a sync starting now must end: SyncTimeout from now;
// zero (no end) without one.
func (j *Judge) syncDeadline() time.Time {
	if t := j.opts.SyncTimeout; t > 0 {
		return time.Now().Add(t)
	}
	return time.Time{}
}

// waitForSync waits until the informers have synced, or ctx ends, or (with
// a deadline) a watch fails or the deadline passes.
func (j *Judge) waitForSync(ctx context.Context, deadline time.Time, rs ...resource) error {
	synced := make([]cache.DoneChecker, len(rs))
	for i, r := range rs {
		synced[i] = r.synced
	}
	waitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !deadline.IsZero() {
		t := j.opts.SyncTimeout
		timer := time.AfterFunc(time.Until(deadline), func() { cancel(fmt.Errorf("no answer from the API server within %s", t)) })
		defer timer.Stop()
		go func() {
			select {
			case err := <-j.failed:
				cancel(err)
			case <-waitCtx.Done():
			}
		}()
	}
	if cache.WaitFor(waitCtx, "", synced...) || ctx.Err() != nil {
		return nil
	}
	return context.Cause(waitCtx)
}

func (j *Judge) nodeStore() cache.Store  { return j.store("nodes") }
func (j *Judge) podIndex() cache.Indexer { return j.store("pods") }

// revisions are the latest template hash of each DaemonSet; nil when not
// watched.
func (j *Judge) revisions() map[string]string {
	st := j.store("controllerrevisions")
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
func (j *Judge) addEvents(s *snapshot.Snapshot, node string) {
	st := j.store("events")
	if st == nil {
		return
	}
	evs, _ := st.ByIndex(nodeIndex, node)
	for _, e := range evs {
		snapshot.KeepEvent(s.UpgradeEvents, node, e.(*stored[upgradeEvent]).Of.Event)
	}
}

// readOperator reads the ClusterPolicy and NVIDIADrivers again; on a
// failure the hooks hear it and the last ones read stay.
func (j *Judge) readOperator(ctx context.Context) error {
	s := snapshot.Snapshot{Namespace: j.opts.Namespace}
	if err := read.Operator(ctx, j.client, &s); err != nil {
		j.watchFailed("clusterpolicies", err)
		return err
	}
	j.operator = s
	return nil
}

// replan decides the roster and rules again from the DaemonSets and the
// operator's objects, as the one-shot commands do.
func (j *Judge) replan() {
	s := j.operator
	s.DaemonSets = nil
	for _, o := range j.store("daemonsets").List() {
		s.DaemonSets = append(s.DaemonSets, o.(*stored[snapshot.DaemonSet]).Of)
	}
	slices.SortFunc(s.DaemonSets, func(a, b snapshot.DaemonSet) int { return strings.Compare(a.Name, b.Name) })
	j.plan = pipeline.Decide(&s, j.opts.Options)
	j.operator.DaemonSets = s.DaemonSets
}

// judge judges the named nodes again and tells the hooks what changed.
func (j *Judge) judge(names []string, initial bool) {
	began := time.Now()
	slices.SortFunc(names, judge.NaturalCompare)
	b := verdict.Batch{Initial: initial, Judged: len(names), Roster: j.plan.Roster, Rules: j.plan.Rules}
	after := j.verdictsOf(names, began)
	if j.opts.Upgrades {
		judged := len(after)
		b.Rollout = j.rollout(names, after, began)
		if len(after) > judged { // nodes whose part in the rollout changed
			for name := range after {
				names = append(names, name)
			}
			slices.SortFunc(names, judge.NaturalCompare)
			names = slices.Compact(names)
		}
	}
	for _, name := range names {
		before, now := j.verdicts[name], after[name]
		if reflect.DeepEqual(before, now) {
			continue
		}
		if now == nil {
			delete(j.verdicts, name)
		} else {
			j.verdicts[name] = now
		}
		b.Changes = append(b.Changes, verdict.Change{Before: before, After: now})
	}
	b.Time = time.Now()
	b.Took = b.Time.Sub(began)
	for _, h := range j.hooks {
		if h.Judged != nil {
			h.Judged(b)
		}
	}
}

// rollout judges the driver upgrade of every node held, and sets each
// node's part in it into after: a node's upgrade verdict may change with
// another's (a cordon spends the budget it waits for), so a node not judged
// again gets a new verdict in after when its part changed. It costs a pass
// over the held nodes and their driver pods per batch.
func (j *Judge) rollout(judged []string, after map[string]*verdict.Verdict, now time.Time) *upgrade.Rollout {
	s := j.base()
	reads := upgrade.Reads(j.plan.Roster)
	for _, name := range j.nodeStore().ListKeys() {
		obj, found, _ := j.nodeStore().GetByKey(name)
		if !found {
			continue
		}
		s.Nodes = append(s.Nodes, obj.(*stored[snapshot.Node]).Of)
		pods, _ := j.podIndex().ByIndex(nodeIndex, name)
		for _, p := range pods {
			if _, read := reads(&p.(*stored[snapshot.Pod]).Of); read {
				s.Pods = append(s.Pods, p.(*stored[snapshot.Pod]).Of)
			}
		}
		j.addEvents(s, name)
	}
	ro := j.plan.Rollout(s, now)
	part := make(map[string]*upgrade.Node, len(ro.Nodes))
	for i := range ro.Nodes {
		part[ro.Nodes[i].Node] = &ro.Nodes[i]
	}
	for name, v := range after {
		v.Upgrade = part[name]
	}
	wasJudged := make(map[string]bool, len(judged))
	for _, n := range judged {
		wasJudged[n] = true
	}
	for name, v := range j.verdicts {
		// A node judged and not in after is gone: it keeps no part.
		if !wasJudged[name] && !reflect.DeepEqual(v.Upgrade, part[name]) {
			again := *v
			again.Upgrade = part[name]
			after[name] = &again
		}
	}
	return &ro
}

// base is a snapshot of what every verdict reads besides nodes and pods.
func (j *Judge) base() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: j.opts.Namespace, DaemonSets: j.operator.DaemonSets, Policy: j.operator.Policy, NVIDIADrivers: j.operator.NVIDIADrivers}
	if j.opts.Upgrades {
		s.Revisions, s.UpgradeEvents = j.revisions(), map[string]snapshot.Event{}
	}
	return s
}

// verdictsOf judges the named nodes through the pipeline, from a snapshot of
// them, their pods and the DaemonSets; a node gone has no verdict. A pause
// that is not stuck yet is queued again for when it will be.
func (j *Judge) verdictsOf(names []string, now time.Time) map[string]*verdict.Verdict {
	s := j.base()
	for _, name := range names {
		obj, found, _ := j.nodeStore().GetByKey(name)
		if !found {
			continue
		}
		n := obj.(*stored[snapshot.Node]).Of
		s.Nodes = append(s.Nodes, n)
		if s.UpgradeEvents != nil {
			j.addEvents(s, name)
		}
		pods, _ := j.podIndex().ByIndex(nodeIndex, name)
		for _, p := range pods {
			s.Pods = append(s.Pods, p.(*stored[snapshot.Pod]).Of)
		}
		if after := j.opts.StuckAfter; after > 0 {
			for _, p := range judge.Pauses(n, j.plan.Roster) {
				if !p.Since.IsZero() && !p.StuckAt(now, after) {
					j.queue.AddAfter(name, p.Since.Add(after).Sub(now)+time.Second)
				}
			}
		}
	}
	out := map[string]*verdict.Verdict{}
	// Judge fails only on a rule about an operand not in the roster, which
	// the plan's rules never are.
	r, _ := j.plan.Judge(s, now)
	if r != nil {
		for i := range r.Nodes {
			out[r.Nodes[i].Node] = &r.Nodes[i]
		}
	}
	return out
}
