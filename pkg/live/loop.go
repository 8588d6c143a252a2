package live

import (
	"context"
	"slices"
)

// item is what the queue holds: a node to judge again, or a change that
// decides the scope again (the roster, the rules and so every node's
// reasons).
type item struct {
	kind itemKind
	name string // the node's, or the ConfigMap's
}

type itemKind uint8

const (
	nodeChanged       itemKind = iota
	daemonSetsChanged          // a DaemonSet, or one of its ControllerRevisions
	configChanged              // the named ConfigMap: a config the policy names decides the scope again
)

// judgeNode is the item of the named node.
func judgeNode(name string) item { return item{nodeChanged, name} }

// mark queues the items to be judged again.
func (t *Tracker) mark(items ...item) {
	for _, i := range items {
		t.queue.Add(i)
	}
}

// sortOut splits the items taken into the nodes named and whether the scope
// is decided again: a DaemonSet changed, or a config the policy names.
func (t *Tracker) sortOut(items []item) (names []string, rescope bool) {
	for _, i := range items {
		switch i.kind {
		case nodeChanged:
			names = append(names, i.name)
		case daemonSetsChanged:
			rescope = true
		case configChanged:
			rescope = rescope || t.namesConfig(i.name)
		}
	}
	return names, rescope
}

// Run watches and judges until ctx ends, then returns nil once the
// informers have stopped; an error only if the first sync fails (see
// Options.SyncTimeout). The first batch judges every node; it comes once all
// informers have synced, so the verdict is never made from half a list.
func (t *Tracker) Run(ctx context.Context) error { return t.synced(ctx, t.judging) }

// judging judges every node once, then the nodes each burst of events
// touches, until the queue shuts down with ctx.
func (t *Tracker) judging(ctx context.Context) error {
	t.ctx = ctx
	// The first batch judges every node: what the informers queued on the
	// way is in it.
	for _, i := range t.take(false) {
		t.queue.Done(i)
	}
	// An error ends the watch: a scope the pipeline cannot judge by stays
	// until the DaemonSets change, and the verdicts would stand still.
	if err := t.judge(t.nodeStore().ListKeys(), true, true); err != nil {
		return err
	}
	t.ready.Store(true)
	if t.work != nil {
		t.wg.Go(func() { t.keepWorkloads(ctx) })
	}
	context.AfterFunc(ctx, t.queue.ShutDown)
	for {
		got := t.take(true)
		if got == nil {
			return nil
		}
		names, rescoped := t.sortOut(got)
		if rescoped {
			// The operator renders its DaemonSets from the ClusterPolicy: a
			// change of one is when the policy may have changed too.
			_ = t.readOperator(ctx)
			t.rescope()
			if err := t.watchNodes(ctx, t.syncDeadline()); err != nil {
				// The old informer keeps on: the reasons may miss the new
				// selector label until the next DaemonSet change.
				t.watchFailed(Nodes, err)
			}
			names = append(names, t.nodeStore().ListKeys()...)
			for n := range t.verdicts { // gone nodes too
				names = append(names, n)
			}
			slices.Sort(names)
			names = slices.Compact(names)
		}
		// A ConfigMap the policy does not name (a leader's record, renewed
		// every few seconds) changes no verdict: no batch, no rollout pass.
		if len(names) > 0 {
			if err := t.judge(names, false, rescoped); err != nil {
				return err
			}
		}
		for _, i := range got { // only what Get handed out: Done queues a dirty item again
			t.queue.Done(i)
		}
	}
}

// sync starts the informers and waits for their first lists, then reads
// the operator's objects and decides the scope.
func (t *Tracker) sync(ctx context.Context) error {
	t.leaveUnavailable(ctx)
	for i := range t.resources {
		t.start(ctx, &t.resources[i])
	}
	// SyncTimeout bounds the whole first sync, the nodes' list included.
	deadline := t.syncDeadline()
	if err := t.waitForSync(ctx, deadline, t.resources...); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := t.readOperator(ctx); err != nil && t.opts.SyncTimeout > 0 {
		return err
	}
	t.rescope()
	return t.watchNodes(ctx, deadline)
}

// Hold runs the informers as Run does, each object trimmed alike, and judges
// nothing: what holding the objects costs, the memory floor serve is
// measured against (go tool task bench:serve). synced is called once they
// have synced; Hold returns when ctx ends.
func (t *Tracker) Hold(ctx context.Context, synced func()) error {
	return t.synced(ctx, func(ctx context.Context) error {
		synced()
		<-ctx.Done()
		return nil
	})
}

// synced runs the informers, and then, once they have synced, until ctx
// ends; it returns once the informers have stopped.
func (t *Tracker) synced(ctx context.Context, then func(context.Context) error) error {
	ctx, stop := context.WithCancel(ctx)
	defer t.wg.Wait()
	defer stop()
	defer t.queue.ShutDown()
	if err := t.sync(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	return then(ctx)
}

// take gets what the queue holds: with wait, it first waits for one item
// (nil once the queue shuts down); then it takes every item queued so far,
// so that a burst of events makes one batch. The caller marks them Done.
func (t *Tracker) take(wait bool) []item {
	var items []item
	if wait {
		i, shutdown := t.queue.Get()
		if shutdown {
			return nil
		}
		items = append(items, i)
	}
	for t.queue.Len() > 0 {
		i, shutdown := t.queue.Get()
		if shutdown {
			break
		}
		items = append(items, i)
	}
	return items
}
