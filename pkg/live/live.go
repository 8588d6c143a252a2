// Package live keeps the verdict of audit, order-check and matrix current:
// informers on the nodes, the namespace's pods and (for reasons and
// --discover) its DaemonSets, trimmed to the judges' fields as they arrive;
// after the first full sync, every event marks the nodes it touches, and only
// those are judged again, by the same pure judges the one-shot commands use
// (pkg/judge, pkg/explain), each on a snapshot of the one node.
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

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Options say what to judge, as the one-shot commands' flags do.
type Options struct {
	Namespace    string // of the operand DaemonSets and their pods
	NodeSelector string // label selector of the nodes judged; empty: all
	Discover     bool   // operands from the namespace's DaemonSets, not the lab's five
	AllRules     bool   // every rule of the start-up order, not only the device rule
	Explain      bool   // reasons, warnings and unexpected pods (watches DaemonSets)
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
	resources []resource
	hooks     []Hooks
	dirty     *dirtySet
	ready     atomic.Bool
	failed    chan error // the first watch error, for SyncTimeout

	// Owned by the goroutine of Run.
	verdicts   map[string]*verdict.Verdict
	daemonSets []snapshot.DaemonSet
	roster     []operand.Operand
	rules      []operand.Rule
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
	j := &Judge{opts: opts, dirty: newDirtySet(), failed: make(chan error, 1), verdicts: map[string]*verdict.Verdict{}}
	nodes := coreinformers.NewFilteredNodeInformer(client, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = opts.NodeSelector })
	pods := coreinformers.NewFilteredPodInformer(client, opts.Namespace, 0, cache.Indexers{nodeIndex: podNode}, nil)
	if err := j.add("nodes", nodes, trimNode(!opts.Explain), nodeEvents(j.dirty.add)); err != nil {
		return nil, err
	}
	if err := j.add("pods", pods, trimPod, podEvents(j.dirty.add)); err != nil {
		return nil, err
	}
	if opts.Explain || opts.Discover {
		dss := appsinformers.NewFilteredDaemonSetInformer(client, opts.Namespace, 0, cache.Indexers{}, nil)
		if err := j.add("daemonsets", dss, trimDaemonSet, daemonSetEvents(j.dirty.add)); err != nil {
			return nil, err
		}
	}
	return j, nil
}

func (j *Judge) add(name string, inf cache.SharedIndexInformer, trim cache.TransformFunc, h cache.ResourceEventHandler) error {
	if err := inf.SetTransform(trim); err != nil {
		return err
	}
	err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		select {
		case j.failed <- fmt.Errorf("watch %s: %w", name, err):
		default:
		}
		for _, h := range j.hooks {
			if h.WatchFailed != nil {
				h.WatchFailed(name, err)
			}
		}
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
	for _, r := range j.resources {
		wg.Go(func() { r.informer.RunWithContext(ctx) })
	}
	if err := j.waitForSync(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	j.dirty.take() // the first batch judges every node anyway
	j.refreshRoster()
	j.judge(j.nodeStore().ListKeys(), true)
	j.ready.Store(true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-j.dirty.ready:
		}
		names := j.dirty.take()
		if len(names) == 0 {
			continue
		}
		if _, ok := names[daemonSetsChanged]; ok {
			j.refreshRoster()
			for _, n := range j.nodeStore().ListKeys() {
				names[n] = struct{}{}
			}
			for n := range j.verdicts { // gone nodes too
				names[n] = struct{}{}
			}
			delete(names, daemonSetsChanged)
		}
		keys := make([]string, 0, len(names))
		for n := range names {
			keys = append(keys, n)
		}
		j.judge(keys, false)
	}
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

// refreshRoster reads the DaemonSets again and with them the operands and
// rules, as --discover and --all-rules decide.
func (j *Judge) refreshRoster() {
	j.daemonSets = nil
	if len(j.resources) > 2 {
		for _, o := range j.resources[2].informer.GetStore().List() {
			j.daemonSets = append(j.daemonSets, o.(*stored[snapshot.DaemonSet]).Of)
		}
		slices.SortFunc(j.daemonSets, func(a, b snapshot.DaemonSet) int { return strings.Compare(a.Name, b.Name) })
	}
	j.roster = operand.Lab
	if j.opts.Discover {
		j.roster = discover.Roster(j.daemonSets)
	}
	j.rules = []operand.Rule{operand.DeviceRule}
	if j.opts.AllRules {
		j.rules = operand.RulesFor(j.roster, operand.AllRules)
	}
}

// judge judges the named nodes again and tells the hooks what changed.
func (j *Judge) judge(names []string, initial bool) {
	began := time.Now()
	slices.SortFunc(names, judge.NaturalCompare)
	b := verdict.Batch{Initial: initial, Judged: len(names), Roster: j.roster, Rules: j.rules}
	for _, name := range names {
		after := j.verdict(name)
		before := j.verdicts[name]
		if reflect.DeepEqual(before, after) {
			continue
		}
		if after == nil {
			delete(j.verdicts, name)
		} else {
			j.verdicts[name] = after
		}
		b.Changes = append(b.Changes, verdict.Change{Before: before, After: after})
	}
	b.Time = time.Now()
	b.Took = b.Time.Sub(began)
	for _, h := range j.hooks {
		if h.Judged != nil {
			h.Judged(b)
		}
	}
}

// verdict judges one node from a snapshot of that node, its pods and the
// DaemonSets; nil if the node is gone.
func (j *Judge) verdict(name string) *verdict.Verdict {
	obj, found, _ := j.nodeStore().GetByKey(name)
	if !found {
		return nil
	}
	s := &snapshot.Snapshot{Namespace: j.opts.Namespace, Nodes: []snapshot.Node{obj.(*stored[snapshot.Node]).Of}, DaemonSets: j.daemonSets}
	pods, _ := j.podIndex().ByIndex(nodeIndex, name)
	for _, p := range pods {
		s.Pods = append(s.Pods, p.(*stored[snapshot.Pod]).Of)
	}
	return verdict.Of(s, name, j.roster, j.rules, j.opts.Explain)
}
