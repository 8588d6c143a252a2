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
}

// Judge is the live judge of one cluster.
type Judge struct {
	opts      Options
	client    kubernetes.Interface
	resources []resource
	hooks     []Hooks
	// queue holds the names of the nodes to judge again: a node queued
	// twice before it is judged is judged once, and a pause is queued
	// again for the moment it becomes stuck (AddAfter).
	queue  workqueue.TypedDelayingInterface[string]
	ready  atomic.Bool
	failed chan error // the first watch error, for SyncTimeout

	// Owned by the goroutine of Run.
	verdicts map[string]*verdict.Verdict
	operator snapshot.Snapshot // the ClusterPolicy and NVIDIADrivers, with the reader's notes
	plan     pipeline.Plan
}

// resource is one watched kind of object.
type resource struct {
	name     string
	informer cache.SharedIndexInformer
	synced   cache.DoneChecker
}

// daemonSetsChanged is queued, in place of a node name, when a DaemonSet
// changes: the roster and every node's reasons may change with it. No node
// is named that way (a name is a DNS subdomain).
const daemonSetsChanged = "\x00daemonsets"

// New sets up the informers; nothing is read before Run. Each object is
// trimmed to what the judges read as it arrives. The informers list with a
// streaming watch (WatchList) where the server offers it.
func New(client kubernetes.Interface, opts Options) (*Judge, error) {
	j := &Judge{opts: opts, client: client, queue: workqueue.NewTypedDelayingQueue[string](), failed: make(chan error, 1), verdicts: map[string]*verdict.Verdict{}}
	read := opts.ReadOptions()
	nodes := coreinformers.NewFilteredNodeInformer(client, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = opts.NodeSelector })
	pods := coreinformers.NewFilteredPodInformer(client, opts.Namespace, 0, cache.Indexers{nodeIndex: podNode}, nil)
	// The DaemonSets are few; the roster and the reasons read them.
	dss := appsinformers.NewFilteredDaemonSetInformer(client, opts.Namespace, 0, cache.Indexers{}, nil)
	if err := j.add("nodes", nodes, trimNode(read.DeployLabelsOnly, read.Trace), nodeEvents(j.mark)); err != nil {
		return nil, err
	}
	if err := j.add("pods", pods, trimPod, podEvents(j.mark)); err != nil {
		return nil, err
	}
	if err := j.add("daemonsets", dss, trimDaemonSet, daemonSetEvents(j.mark)); err != nil {
		return nil, err
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

func (j *Judge) add(name string, inf cache.SharedIndexInformer, trim cache.TransformFunc, h cache.ResourceEventHandler) error {
	if err := inf.SetTransform(trim); err != nil {
		return err
	}
	err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		j.watchFailed(name, err)
	})
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return err
	}
	j.resources = append(j.resources, resource{name: name, informer: inf, synced: reg.HasSyncedChecker()})
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
// delivered its initial list.
func (j *Judge) Synced() map[string]bool {
	out := make(map[string]bool, len(j.resources))
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
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	defer j.queue.ShutDown()
	for _, r := range j.resources {
		wg.Go(func() { r.informer.RunWithContext(ctx) })
	}
	if err := j.waitForSync(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := j.readOperator(ctx); err != nil && j.opts.SyncTimeout > 0 {
		return err
	}
	j.replan()
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

// waitForSync waits until every informer has synced, or ctx ends, or (with
// SyncTimeout) a watch fails or time runs out.
func (j *Judge) waitForSync(ctx context.Context) error {
	synced := make([]cache.DoneChecker, len(j.resources))
	for i, r := range j.resources {
		synced[i] = r.synced
	}
	waitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t := j.opts.SyncTimeout; t > 0 {
		timer := time.AfterFunc(t, func() { cancel(fmt.Errorf("no answer from the API server within %s", t)) })
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

func (j *Judge) nodeStore() cache.Store  { return j.resources[0].informer.GetStore() }
func (j *Judge) podIndex() cache.Indexer { return j.resources[1].informer.GetIndexer() }

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
	for _, o := range j.resources[2].informer.GetStore().List() {
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

// verdictsOf judges the named nodes through the pipeline, from a snapshot of
// them, their pods and the DaemonSets; a node gone has no verdict. A pause
// that is not stuck yet is queued again for when it will be.
func (j *Judge) verdictsOf(names []string, now time.Time) map[string]*verdict.Verdict {
	s := &snapshot.Snapshot{Namespace: j.opts.Namespace, DaemonSets: j.operator.DaemonSets, Policy: j.operator.Policy, NVIDIADrivers: j.operator.NVIDIADrivers}
	for _, name := range names {
		obj, found, _ := j.nodeStore().GetByKey(name)
		if !found {
			continue
		}
		n := obj.(*stored[snapshot.Node]).Of
		s.Nodes = append(s.Nodes, n)
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
