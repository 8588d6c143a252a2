package pipeline

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/workload"
)

// readWorkloads reads the nodes (judged for health as o says; with every
// label when allLabels, as the scheduler matches selectors on any) and
// the GPU pods side by side, with more beside them when more is set, and
// judges each node's health as of now. The GPU pods' notes are what the
// commands note: the roster's are the node judges' to say.
func readWorkloads(ctx context.Context, c kubernetes.Interface, o Options, allLabels bool, more func() error) (*workload.Inputs, error) {
	o.Health = true
	ro := o.ReadOptions()
	if allLabels {
		ro.NodeLabels = nil
	}
	w := &workload.Inputs{}
	var g errgroup.Group
	g.Go(func() (err error) { w.Snapshot, err = read.Snapshot(ctx, c, o.Namespace, ro); return err })
	g.Go(func() (err error) {
		w.Pods, err = read.GPUPods(ctx, c, read.WorkloadOptions{NoRejected: ro.Kubelet})
		return err
	})
	if more != nil {
		g.Go(more)
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if ro.Kubelet { // the Failed pods, listed once for both
		w.Pods.UseRejected(w.Snapshot.Rejected)
	}
	judge.SortNodes(w.Snapshot)
	sc := Decide(w.Snapshot, o)
	hs := health.Assess(w.Snapshot, sc.Roster, o.now(), o.StuckAfter)
	w.Health = make(map[string]*health.Node, len(hs))
	for i := range hs {
		w.Health[hs[i].Node] = &hs[i]
	}
	return w, nil
}

// Capacity says where the cluster's GPUs are (gpuops capacity): the nodes
// judged for health as the options say, grouped by o.GroupBy, and the GPU
// pods of every namespace.
func Capacity(ctx context.Context, c kubernetes.Interface, o Options) (*workload.Capacity, error) {
	w, err := readWorkloads(ctx, c, o, false, nil)
	if err != nil {
		return nil, err
	}
	out := w.Capacity(o.GroupBy)
	out.Notes = w.Pods.Notes
	return out, nil
}

// Why says why the target's GPU pods in namespace ns are not running as
// asked (gpuops why), judged against every GPU pod and node of the
// cluster; a target with no pod there is a NotFoundError.
func Why(ctx context.Context, c kubernetes.Interface, o Options, ns string, t workload.Target) (*workload.WhyReport, error) {
	var replicaSets map[string][]string
	var warnings map[string][]snapshot.Warning
	var notes []string
	more := func() (err error) {
		if t.Kind == "Deployment" {
			if replicaSets, err = read.ReplicaSets(ctx, c, ns); err != nil {
				return err
			}
		}
		warnings, notes, err = read.Warnings(ctx, c, ns)
		return err
	}
	w, err := readWorkloads(ctx, c, o, true, more)
	if err != nil {
		return nil, err
	}
	w.Warnings = warnings
	owns := func(name, owner string) bool { return t.Owns(name, owner, replicaSets) }
	r := &workload.WhyReport{Target: t.String(), Namespace: ns, Notes: slices.Concat(w.Pods.Notes, notes)}
	var pods []snapshot.GPUPod
	for _, p := range w.Pods.Pods {
		if p.Namespace == ns && owns(p.Name, p.Owner) {
			pods = append(pods, p)
		}
	}
	r.Answers = workload.Why(w.Pods, pods, w.Cluster(o.now(), o.StuckAfter))
	for _, rj := range w.Pods.Rejected {
		if rj.Namespace == ns && t.Kind == "Pod" && rj.Name == t.Name {
			r.Answers = append(r.Answers, workload.WhyRejected(w.Pods, rj))
		}
	}
	if len(r.Answers) > 0 {
		return r, nil
	}
	// No GPU pod: the target's other pods, if it has any, say why not.
	name := "" // a pod the target names is listed by name
	if t.Kind == "Pod" {
		name = t.Name
	}
	others, err := read.PodsIn(ctx, c, ns, name, owns)
	if err != nil {
		return nil, err
	}
	if len(others) == 0 {
		return nil, &NotFoundError{Target: t, Namespace: ns}
	}
	r.Others = others
	return r, nil
}

// NotFoundError is a target that has no pod: bad input.
type NotFoundError struct {
	Target    workload.Target
	Namespace string
}

func (e *NotFoundError) Error() string {
	if e.Target.Kind == "Pod" {
		return fmt.Sprintf("pod %q not found in namespace %s", e.Target.Name, e.Namespace)
	}
	return fmt.Sprintf("no pod of %s in namespace %s", e.Target, e.Namespace)
}

// Pods says why each GPU pod that is not running as asked is not (gpuops
// pods): every one of the cluster, or those of namespace ns (every
// namespace when empty) that selector selects (all when empty), listed by
// a second LIST narrowed on the server.
func Pods(ctx context.Context, c kubernetes.Interface, o Options, ns, selector string) (*workload.PodsReport, error) {
	var listed *snapshot.GPUPods
	var warnings map[string][]snapshot.Warning
	var notes []string
	more := func() (err error) {
		if ns != "" || selector != "" {
			if listed, err = read.GPUPods(ctx, c, read.WorkloadOptions{Namespace: ns, LabelSelector: selector}); err != nil {
				return err
			}
		}
		warnings, notes, err = read.Warnings(ctx, c, ns)
		return err
	}
	w, err := readWorkloads(ctx, c, o, true, more)
	if err != nil {
		return nil, err
	}
	w.Warnings = warnings
	r := w.PodsOf(listed, o.now(), o.StuckAfter)
	r.Notes = slices.Concat(w.Pods.Notes, notes)
	return r, nil
}
