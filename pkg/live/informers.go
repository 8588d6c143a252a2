package live

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Resource names what the tracker reads: a kind it watches (the keys of
// Synced) or a read it makes beside the watches, as the hooks name it and
// gpuops serve labels its metrics.
type Resource string

// The kinds watched, and the reads beside them.
const (
	Nodes               Resource = "nodes"
	Pods                Resource = "pods" // the namespace's
	DaemonSets          Resource = "daemonsets"
	ControllerRevisions Resource = "controllerrevisions" // with upgrades
	UpgradeEvents       Resource = "events"              // the upgrade controller's node Events, with upgrades
	PodWarnings         Resource = "warnings"            // the Warning Events on the namespace's pods, with the kubelet's reports
	ResourceSlices      Resource = "resourceslices"      // the DRA driver's, with the offers
	ConfigMaps          Resource = "configmaps"          // the namespace's, with the offers; also their read by name
	ClusterPolicies     Resource = "clusterpolicies"     // the read of the ClusterPolicy, NVIDIADrivers and the operator's version
	DeviceHolders       Resource = "device-holders"      // the read of the pods holding a refused node's devices
	// With the workloads (serve --workloads, workloads.go).
	GPUPods          Resource = "gpupods"          // the pods of every namespace that have not ended, GPU pods kept
	RejectedPods     Resource = "rejectedpods"     // the Failed pods of every namespace, those refused at admission kept
	ResourceClaims   Resource = "resourceclaims"   // of every namespace
	DeviceClasses    Resource = "deviceclasses"    //
	WorkloadWarnings Resource = "workloadwarnings" // the Warning Events on the pods of every namespace
)

// resource is one watched kind of object.
type resource struct {
	name     Resource
	informer cache.SharedIndexInformer
	synced   cache.DoneChecker
	stop     context.CancelFunc // set once it runs
	*optional
}

// optional is a resource the tracker can go without. Its probe (mayWatch)
// lists one object and opens a watch: if the user may not do both, or the
// server does not serve the resource, it is not watched (an informer would
// retry for ever and never sync), and the hooks are told what goes without
// it.
type optional struct {
	probe   func(context.Context) error
	without string // what goes without it, in words
}

// listWatcher is a typed client of one resource, as informers use it.
type listWatcher[L runtime.Object] interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// mayWatch is the probe of an optional resource read through c with the
// informer's selection: a LIST of one object, then a watch from the list's
// version, closed at once. Both are asked because a right to list without
// one to watch (a role that lists a kind cluster-wide and watches it in one
// namespace) leaves an informer failing for ever.
func mayWatch[L runtime.Object](c listWatcher[L], selection func(*metav1.ListOptions)) func(context.Context) error {
	return func(ctx context.Context) error {
		o := metav1.ListOptions{Limit: 1}
		if selection != nil {
			selection(&o)
		}
		list, err := c.List(ctx, o)
		if err != nil {
			return err
		}
		m, err := meta.ListAccessor(list)
		if err != nil {
			return err
		}
		o.Limit, o.ResourceVersion = 0, m.GetResourceVersion()
		w, err := c.Watch(ctx, o)
		if err != nil {
			return err
		}
		w.Stop()
		return nil
	}
}

func (t *Tracker) add(name Resource, inf cache.SharedIndexInformer, trim cache.TransformFunc, h cache.ResourceEventHandler, opt *optional) error {
	r, err := t.watched(name, inf, trim, h, opt)
	if err == nil {
		t.resources = append(t.resources, r)
	}
	return err
}

// watched readies an informer: trimmed, its errors told, its events marking
// nodes.
func (t *Tracker) watched(name Resource, inf cache.SharedIndexInformer, trim cache.TransformFunc, h cache.ResourceEventHandler, opt *optional) (resource, error) {
	if err := inf.SetTransform(trim); err != nil {
		return resource{}, err
	}
	err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		t.watchFailed(name, err)
	})
	if err != nil {
		return resource{}, err
	}
	reg, err := inf.AddEventHandler(h)
	if err != nil {
		return resource{}, err
	}
	return resource{name: name, informer: inf, synced: reg.HasSyncedChecker(), optional: opt}, nil
}

// start runs the informer until ctx ends or it is stopped.
func (t *Tracker) start(ctx context.Context, r *resource) {
	ctx, r.stop = context.WithCancel(ctx)
	t.wg.Go(func() { r.informer.RunWithContext(ctx) })
}

// watchNodes starts a node informer that keeps the labels the verdicts read
// given the DaemonSets held, and waits for its first list, when the one
// running (if any) does not keep them all: a DaemonSet that selects on a new
// label needs the nodes read again, which is rare. On success the new
// informer replaces the old, which stops. The wait ends at deadline (see
// waitForSync).
func (t *Tracker) watchNodes(ctx context.Context, deadline time.Time) error {
	want := t.opts.LabelsRead(t.operator.DaemonSets)
	old := slices.IndexFunc(t.resources, func(r resource) bool { return r.name == Nodes })
	if old >= 0 && t.labels.Covers(want) {
		return nil
	}
	inf := coreinformers.NewFilteredNodeInformer(t.client, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = t.opts.NodeSelector })
	r, err := t.watched(Nodes, inf, trimNode(t.opts.ReadOptions(), want), nodeEvents(t.mark), nil)
	if err != nil {
		return err
	}
	t.start(ctx, &r)
	if err := t.waitForSync(ctx, deadline, r); err != nil || ctx.Err() != nil {
		r.stop()
		return err
	}
	t.mu.Lock()
	if old >= 0 {
		t.resources[old].stop()
		t.resources[old] = r
	} else {
		t.resources = append(t.resources, r)
	}
	t.mu.Unlock()
	t.labels = want
	return nil
}

// leaveUnavailable stops watching the resources the tracker can go without
// that the user may not list or the server does not serve, and tells the
// hooks.
func (t *Tracker) leaveUnavailable(ctx context.Context) {
	left := map[Resource]bool{}
	for _, r := range t.resources {
		if r.optional == nil {
			continue
		}
		if err := r.probe(ctx); apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			left[r.name] = true
			for _, h := range t.hooks {
				if h.Skipped != nil {
					h.Skipped(r.name, r.without, err)
				}
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resources = slices.DeleteFunc(t.resources, func(r resource) bool { return left[r.name] })
}

// store is the store of the named resource; nil when it is not watched.
// It is read under mu: the workload side is judged in a goroutine of its
// own (workloads.go).
func (t *Tracker) store(name Resource) cache.Indexer {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.resources {
		if r.name == name {
			return r.informer.GetIndexer()
		}
	}
	return nil
}

// watchFailed tells SyncTimeout's wait and the hooks of a failed list or
// watch (or read of the operator's objects).
func (t *Tracker) watchFailed(resource Resource, err error) {
	select {
	case t.failed <- fmt.Errorf("watch %s: %w", resource, err):
	default:
	}
	for _, h := range t.hooks {
		if h.WatchFailed != nil {
			h.WatchFailed(resource, err)
		}
	}
}

// Synced reports, per watched resource, whether its informer has
// delivered its initial list; the nodes are false until their informer
// runs.
func (t *Tracker) Synced() map[Resource]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[Resource]bool{Nodes: false}
	for _, r := range t.resources {
		out[r.name] = r.informer.HasSynced()
	}
	return out
}

// syncDeadline is when a sync starting now must end: SyncTimeout from now;
// zero (no end) without one.
func (t *Tracker) syncDeadline() time.Time {
	if timeout := t.opts.SyncTimeout; timeout > 0 {
		return time.Now().Add(timeout)
	}
	return time.Time{}
}

// waitForSync waits until the informers have synced, or ctx ends, or (with
// a deadline) a watch fails or the deadline passes.
func (t *Tracker) waitForSync(ctx context.Context, deadline time.Time, rs ...resource) error {
	synced := make([]cache.DoneChecker, len(rs))
	for i, r := range rs {
		synced[i] = r.synced
	}
	waitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !deadline.IsZero() {
		timeout := t.opts.SyncTimeout
		timer := time.AfterFunc(time.Until(deadline), func() { cancel(fmt.Errorf("no answer from the API server within %s", timeout)) })
		defer timer.Stop()
		go func() {
			select {
			case err := <-t.failed:
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
