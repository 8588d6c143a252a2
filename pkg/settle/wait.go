package settle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Options tune Wait.
type Options struct {
	Timeout  time.Duration // give up after this long; zero means no limit but ctx's
	Progress io.Writer     // where "name ready/desired" lines go as they change; nil for none
}

// TimeoutError says which DaemonSets had not settled, and where, when time ran out.
type TimeoutError struct {
	After     time.Duration
	Unsettled []Status
}

func (e *TimeoutError) Error() string {
	parts := make([]string, len(e.Unsettled))
	for i, s := range e.Unsettled {
		parts[i] = "DaemonSet " + s.String()
	}
	return fmt.Sprintf("not settled after %s: %s", e.After, strings.Join(parts, "; "))
}

// StuckError says which DaemonSets will not settle without help: each keeps
// pods that were never scheduled and wait for a node that no longer admits
// the DaemonSet. The scheduler will never bind them there; the DaemonSet
// controller would delete them, and count the node out of its status, but
// only when it next syncs the DaemonSet, and a node's label or taint change
// does not start that sync for a pod not bound to the node (Kubernetes 1.37:
// pkg/controller/daemon, syncNodeUpdate). Wait returns it once nothing else
// is left and stuckGrace has passed without the controller acting.
type StuckError struct {
	Namespace string
	Stuck     []Status
}

func (e *StuckError) Error() string {
	var pods, parts []string
	for _, s := range e.Stuck {
		for _, p := range s.Stranded {
			parts = append(parts, fmt.Sprintf("DaemonSet %s: pod %s was never scheduled and node %s no longer admits it", s.Name, p.Pod, p.Node))
			pods = append(pods, p.Pod)
		}
	}
	return fmt.Sprintf("will not settle: %s; the DaemonSet controller removes such a pod only when it next syncs the DaemonSet, "+
		"which a node change does not start: delete it (kubectl -n %s delete pod %s)",
		strings.Join(parts, "; "), e.Namespace, strings.Join(pods, " "))
}

// stuckGrace is how long Wait gives the controller to remove stranded pods
// before it calls them stuck: when the controller does sync the DaemonSet
// (its spec changed, say), their deletion reaches the watch well within it.
const stuckGrace = 10 * time.Second

// ErrInterrupted is returned when ctx is cancelled during a wait.
var ErrInterrupted = errors.New("interrupted")

// Wait blocks until every named DaemonSet of namespace ns is settled (see
// Check) and returns their final statuses. It lists nodes, pods and DaemonSets
// once and then follows their watches, judging again after each change; it
// never polls. The caller's writes must be done before Wait starts: its first
// list then sees them.
func Wait(ctx context.Context, client kubernetes.Interface, ns string, names []string, opts Options) ([]Status, error) {
	parent := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	nodes := coreinformers.NewNodeInformer(client, 0, cache.Indexers{})
	pods := coreinformers.NewPodInformer(client, ns, 0, cache.Indexers{})
	dss := appsinformers.NewDaemonSetInformer(client, ns, 0, cache.Indexers{})

	// A one-slot channel coalesces bursts of events into one judgement.
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	onChange := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	var synced []cache.DoneChecker
	for _, inf := range []cache.SharedIndexInformer{nodes, pods, dss} {
		reg, err := inf.AddEventHandler(onChange)
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg.HasSyncedChecker())
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, inf := range []cache.SharedIndexInformer{nodes, pods, dss} {
		wg.Go(func() { inf.RunWithContext(runCtx) })
	}
	defer func() {
		stop()
		wg.Wait() // the informers stopped
	}()

	// An informer reports synced from a goroutine of its own, possibly after
	// its last initial event was handled: on a quiet cluster no later event
	// would come to look again, so wait for the sync itself first (on
	// channels, not by polling).
	if !cache.WaitFor(ctx, "", synced...) {
		if parent.Err() != nil {
			return nil, fmt.Errorf("%w while waiting for DaemonSets to settle", ErrInterrupted)
		}
		return nil, fmt.Errorf("no answer from the API server within %s", opts.Timeout)
	}
	progress := newProgress(opts.Progress)
	var statuses []Status
	var stuckSince time.Time
	for {
		began := time.Now()
		statuses = judgeAll(ns, names, nodes.GetStore(), pods.GetStore(), dss.GetStore())
		cost := time.Since(began)
		progress.report(statuses)
		left := unsettled(statuses)
		if len(left) == 0 {
			return statuses, nil
		}
		var grace <-chan time.Time
		if allStuck(left) {
			if stuckSince.IsZero() {
				stuckSince = time.Now()
			}
			if wait := stuckGrace - time.Since(stuckSince); wait > 0 {
				grace = time.After(wait)
			} else {
				return nil, &StuckError{Namespace: ns, Stuck: left}
			}
		} else {
			stuckSince = time.Time{}
		}
		// Judging thousands of nodes costs milliseconds and their pods'
		// events come in a stream: after a change, rest four times as long as
		// the last judgement took, so waiting takes at most a fifth of a core
		// at any cluster size (and no time at all on a small lab).
		select {
		case <-grace:
		case <-changed:
			select {
			case <-time.After(4 * cost):
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if parent.Err() != nil {
				return nil, fmt.Errorf("%w while waiting for DaemonSets to settle", ErrInterrupted)
			}
			return nil, &TimeoutError{After: opts.Timeout, Unsettled: unsettled(statuses)}
		}
	}
}

func judgeAll(ns string, names []string, nodeStore, podStore, dsStore cache.Store) []Status {
	nodes := typed[corev1.Node](nodeStore)
	pods := typed[corev1.Pod](podStore)
	out := make([]Status, 0, len(names))
	for _, name := range names {
		obj, found, _ := dsStore.GetByKey(ns + "/" + name)
		if !found {
			out = append(out, Status{Name: name, Lagging: "not found"})
			continue
		}
		out = append(out, Check(obj.(*appsv1.DaemonSet), nodes, pods))
	}
	return out
}

func typed[T any](s cache.Store) []*T {
	list := s.List()
	out := make([]*T, len(list))
	for i, o := range list {
		out[i] = o.(*T)
	}
	return out
}

func allSettled(statuses []Status) bool { return len(unsettled(statuses)) == 0 }

func allStuck(statuses []Status) bool {
	for _, s := range statuses {
		if !s.Stuck() {
			return false
		}
	}
	return true
}

func unsettled(statuses []Status) []Status {
	var out []Status
	for _, s := range statuses {
		if !s.Settled() {
			out = append(out, s)
		}
	}
	return out
}

// progress prints a DaemonSet's ready/desired line when it changes. Nothing
// is printed when everything is settled at the first look.
type progress struct {
	w     io.Writer
	last  map[string]string
	first bool
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, last: map[string]string{}, first: true}
}

func (p *progress) report(statuses []Status) {
	if p.w == nil || (p.first && allSettled(statuses)) {
		p.first = false
		return
	}
	p.first = false
	for _, s := range statuses {
		line := fmt.Sprintf("%s %d/%d ready", s.Name, s.Ready, s.Desired)
		if s.Settled() {
			line += ", settled"
		}
		if p.last[s.Name] != line {
			p.last[s.Name] = line
			fmt.Fprintln(p.w, line)
		}
	}
}
