package live

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/workload"
)

// What serve --workloads keeps live of the workload side, as gpuops
// capacity and pods read it (pkg/snapshot/read, GPUPods and Warnings): the
// pods of every namespace that have not ended, of which the transform keeps
// the GPU pods' model alone (snapshot.GPUPodFrom; of any other pod, only
// its key); the pods the kubelet refused at admission; the ResourceClaims
// and DeviceClasses that settle which pods are GPU pods; the Warning Events
// on pods. They are judged by the one-shot commands' own functions
// (workload.Inputs' Capacity and PodsOf) against the nodes and the health
// the tracker holds: at most once a workloadsEvery after a change, and
// every workloadsAgain without one, for the pods whose wait turns into a
// finding with time alone.

// Workloads is the workload side of the cluster at one moment, as gpuops
// capacity and gpuops pods (of every namespace) say it.
type Workloads struct {
	Capacity *workload.Capacity
	Pods     *workload.PodsReport
}

const (
	workloadsEvery = 500 * time.Millisecond
	workloadsAgain = 10 * time.Second
)

// workloads is what the tracker keeps to judge the workload side: each
// node's health, from its batches, and whether anything changed since the
// last judgement.
type workloads struct {
	mu     sync.Mutex
	health map[string]*health.Node
	dirty  atomic.Bool
}

// judged keeps the health of a batch's nodes (a verdict is not changed
// once judged).
func (w *workloads) judged(b verdict.Batch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range b.Changes {
		if c.After == nil || c.After.Health == nil {
			delete(w.health, c.Node())
		} else {
			w.health[c.Node()] = c.After.Health
		}
	}
	w.dirty.Store(true)
}

// changed marks the workloads to be judged again when an event touched a
// GPU pod (or a claim, a class, a warning): the handler's items, never
// queued, only say whether it did.
func (w *workloads) changed(touched ...item) {
	if len(touched) > 0 {
		w.dirty.Store(true)
	}
}

// touched says, for changed, that any workload object counts.
func touched[T any](*stored[T]) []item { return []item{{}} }

// gpuPodOnly says, for changed, that a pod counts only when it is a GPU
// pod (or one refused at admission).
func gpuPodOnly[T any](s *stored[*T]) []item {
	if s.Of == nil {
		return nil
	}
	return []item{{}}
}

// trimPodTo keeps of a pod what from makes of it, nil when from does not
// take it: then the store holds its key alone. trimGPUPod keeps a GPU pod's
// model (any pod that cannot be one is the key alone); trimRejected what a
// refusal at admission says of a Failed pod.
func trimPodTo[T any](from func(*corev1.Pod) (T, bool)) cache.TransformFunc {
	return func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			s := &stored[*T]{key: keep(p.ObjectMeta)}
			if x, ok := from(p); ok {
				s.Of = &x
			}
			return s, nil
		}
		return obj, nil
	}
}

var (
	trimGPUPod   = trimPodTo(snapshot.GPUPodFrom)
	trimRejected = trimPodTo(snapshot.RejectedPodFrom)
)

func trimClaim(obj any) (any, error) {
	if c, ok := obj.(*resourcev1.ResourceClaim); ok {
		return &stored[snapshot.Claim]{keep(c.ObjectMeta), snapshot.ClaimFrom(c)}, nil
	}
	return obj, nil
}

func trimClass(obj any) (any, error) {
	if c, ok := obj.(*resourcev1.DeviceClass); ok {
		return &stored[bool]{keep(c.ObjectMeta), snapshot.GPUClass(c)}, nil
	}
	return obj, nil
}

// aboutPod is a Warning Event and the pod it is about, namespace/name.
type aboutPod struct {
	Pod string
	snapshot.Warning
}

func trimPodWarning(obj any) (any, error) {
	if e, ok := obj.(*corev1.Event); ok {
		return &stored[aboutPod]{keep(e.ObjectMeta), aboutPod{e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name, snapshot.WarningFrom(e)}}, nil
	}
	return obj, nil
}

// watchWorkloads adds the informers of the workload side, each of which
// the user may go without, and keeps the nodes' health.
func (t *Tracker) watchWorkloads() error {
	t.work = &workloads{health: map[string]*health.Node{}}
	t.Observe(Hooks{Judged: t.work.judged})
	core, dra := t.client.CoreV1(), t.client.ResourceV1()
	unended := func(o *metav1.ListOptions) { o.FieldSelector = read.Unended }
	failed := func(o *metav1.ListOptions) { o.FieldSelector = read.Failed }
	warnings := func(o *metav1.ListOptions) { o.FieldSelector = read.PodWarnings }
	all := metav1.NamespaceAll
	for _, w := range []struct {
		name    Resource
		inf     cache.SharedIndexInformer
		trim    cache.TransformFunc
		h       cache.ResourceEventHandler
		probe   func(context.Context) error
		without string
	}{
		{GPUPods, coreinformers.NewFilteredPodInformer(t.client, all, 0, cache.Indexers{}, unended), trimGPUPod,
			handler(t.work.changed, gpuPodOnly[snapshot.GPUPod]), mayWatch(core.Pods(all), unended), "the GPU pods go unjudged: no gpuops_gpus, no gpuops_gpu_pods_blocked"},
		{RejectedPods, coreinformers.NewFilteredPodInformer(t.client, all, 0, cache.Indexers{}, failed), trimRejected,
			handler(t.work.changed, gpuPodOnly[snapshot.RejectedPod]), mayWatch(core.Pods(all), failed), "the pods refused at admission go unseen"},
		{ResourceClaims, resourceinformers.NewResourceClaimInformer(t.client, all, 0, cache.Indexers{}), trimClaim,
			handler(t.work.changed, touched[snapshot.Claim]), mayWatch(dra.ResourceClaims(all), nil), "pods holding a claim are judged GPU pods"},
		{DeviceClasses, resourceinformers.NewDeviceClassInformer(t.client, 0, cache.Indexers{}), trimClass,
			handler(t.work.changed, touched[bool]), mayWatch(dra.DeviceClasses(), nil), "a claim waiting for its devices is not judged by its class"},
		{WorkloadWarnings, coreinformers.NewFilteredEventInformer(t.client, all, 0, cache.Indexers{}, warnings), trimPodWarning,
			handler(t.work.changed, touched[aboutPod]), mayWatch(core.Events(all), warnings), "a GPU pod's sandbox the runtime cannot create goes unseen"},
	} {
		if err := t.add(w.name, w.inf, w.trim, w.h, &optional{w.probe, w.without}); err != nil {
			return err
		}
	}
	return nil
}

// keepWorkloads judges the workload side until ctx ends: at once, then
// after each change, at most every workloadsEvery, and every
// workloadsAgain.
func (t *Tracker) keepWorkloads(ctx context.Context) {
	tick := time.NewTicker(workloadsEvery)
	defer tick.Stop()
	var last time.Time
	for {
		if now := time.Now(); t.work.dirty.Swap(false) || now.Sub(last) >= workloadsAgain {
			t.judgeWorkloads(now)
			last = now
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// judgeWorkloads judges the workload side from the stores, as gpuops
// capacity and pods judge a read of it, and tells the hooks; nothing when
// the GPU pods are not watched.
func (t *Tracker) judgeWorkloads(now time.Time) {
	pods := t.store(GPUPods)
	if pods == nil {
		return
	}
	s := &snapshot.Snapshot{}
	nodes := t.store(Nodes)
	for _, obj := range nodes.List() {
		s.Nodes = append(s.Nodes, obj.(*stored[snapshot.Node]).Of)
	}
	judge.SortNodes(s)
	s.DevicePools = t.devicePools(nodes.ListKeys())

	f := &snapshot.GPUPods{}
	var candidates []snapshot.GPUPod
	for _, obj := range pods.List() {
		if p := obj.(*stored[*snapshot.GPUPod]).Of; p != nil {
			candidates = append(candidates, *p)
		}
	}
	if st := t.store(RejectedPods); st != nil {
		for _, obj := range st.List() {
			if r := obj.(*stored[*snapshot.RejectedPod]).Of; r != nil {
				f.Rejected = append(f.Rejected, *r)
			}
		}
	}
	if st := t.store(ResourceClaims); st != nil {
		f.Claims = map[string]snapshot.Claim{}
		for _, obj := range st.List() {
			c := obj.(*stored[snapshot.Claim]).Of
			f.Claims[c.Key()] = c
		}
	}
	if st := t.store(DeviceClasses); st != nil {
		f.Classes = map[string]bool{}
		for _, obj := range st.List() {
			c := obj.(*stored[bool])
			f.Classes[c.Name] = c.Of
		}
	}
	f.Keep(candidates)
	var warnings map[string][]snapshot.Warning
	if st := t.store(WorkloadWarnings); st != nil {
		warnings = map[string][]snapshot.Warning{}
		for _, obj := range st.List() {
			w := obj.(*stored[aboutPod]).Of
			warnings[w.Pod] = snapshot.KeepWarning(warnings[w.Pod], w.Warning)
		}
	}
	t.work.mu.Lock()
	healthOf := maps.Clone(t.work.health)
	t.work.mu.Unlock()

	in := &workload.Inputs{Snapshot: s, Health: healthOf, Pods: f, Warnings: warnings}
	w := Workloads{Capacity: in.Capacity(t.opts.GroupBy), Pods: in.PodsOf(nil, now, t.opts.StuckAfter)}
	for _, h := range t.hooks {
		if h.Workloads != nil {
			h.Workloads(w)
		}
	}
}
