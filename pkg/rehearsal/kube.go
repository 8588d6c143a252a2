package rehearsal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/provision"
)

// setState writes the node's upgrade state as the controller does
// (NodeUpgradeStateProvider.ChangeNodeUpgradeState: a strategic merge patch
// of the label, then a Normal Event), and tells the step.
func (r *rehearsal) setState(ctx context.Context, n, state, more string) error {
	if err := r.patchNode(ctx, n, map[string]any{"metadata": map[string]any{"labels": map[string]any{operand.UpgradeStateLabel: state}}}); err != nil {
		return err
	}
	r.state[n] = state
	if err := r.event(ctx, n, "Successfully updated node state label to "+state); err != nil {
		return err
	}
	return r.step(ctx, n, "%s: %s=%s%s", n, operand.UpgradeStateLabel, state, more)
}

// annotate sets one of the controller's node annotations; "" removes it.
func (r *rehearsal) annotate(ctx context.Context, n, key, value string) error {
	var v any = value
	if value == "" {
		v = nil
	}
	return r.patchNode(ctx, n, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
}

// cordon sets spec.unschedulable as the controller's drain helper does.
func (r *rehearsal) cordon(ctx context.Context, n string, on bool) error {
	return r.patchNode(ctx, n, map[string]any{"spec": map[string]any{"unschedulable": on}})
}

// forget takes the controller's state label and annotations off the node.
func (r *rehearsal) forget(ctx context.Context, n string) error {
	node, err := r.c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
	if err != nil {
		return err
	}
	annotations := map[string]any{}
	for k := range node.Annotations {
		if operand.IsUpgradeAnnotation(k) {
			annotations[k] = nil
		}
	}
	return r.patchNode(ctx, n, map[string]any{"metadata": map[string]any{
		"labels": map[string]any{operand.UpgradeStateLabel: nil}, "annotations": annotations}})
}

// patchNode patches a node as the upgrade controller: its writes carry no
// field manager, so the API server names them after its user agent,
// operand.UpgradeManager; the rehearsal names it outright.
func (r *rehearsal) patchNode(ctx context.Context, n string, patch map[string]any) error {
	return r.patchNodeAs(ctx, n, operand.UpgradeManager, patch)
}

// kit is what every rehearsal writes and waits with: the client, the
// operands' namespace, how long a wait may take.
type kit struct {
	c         kubernetes.Interface
	namespace string
	timeout   time.Duration
}

// patchNodeAs patches a node (its status, with subresource "status") with a
// strategic merge patch under the field manager of the component that
// writes it.
func (k kit) patchNodeAs(ctx context.Context, n, manager string, patch map[string]any, subresource ...string) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := k.c.CoreV1().Nodes().Patch(ctx, n, types.StrategicMergePatchType, data, metav1.PatchOptions{FieldManager: manager}, subresource...); err != nil {
		return fmt.Errorf("patch node %s as %s: %w", n, manager, err)
	}
	return nil
}

// giveBack applies gpuops's labels of the node again as gpuops, the same
// values, which makes it an owner again beside the helper that wrote them
// since, whose claim is then dropped: gpuops reset can take the labels off,
// and up does not find them foreign.
func (k kit) giveBack(ctx context.Context, n string, owned map[string]string, helper string) error {
	if len(owned) == 0 {
		return nil
	}
	if _, err := k.c.CoreV1().Nodes().Apply(ctx, corev1ac.Node(n).WithLabels(owned),
		metav1.ApplyOptions{FieldManager: provision.FieldManager, Force: true}); err != nil {
		return fmt.Errorf("give node %s's labels back to %s: %w", n, provision.FieldManager, err)
	}
	return k.dropManager(ctx, n, helper)
}

// dropManager removes a field manager's entries from the node's
// managedFields (the API server keeps what a client sends there). The patch
// carries the resourceVersion it was made from, so a write in between
// (KWOK's heartbeats) makes it conflict and it is made again.
func (k kit) dropManager(ctx context.Context, n, manager string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		node, err := k.c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(node.ManagedFields), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
		if len(kept) == len(node.ManagedFields) || len(kept) == 0 {
			return nil // nothing of its, or nothing else to keep (an empty list would clear them all)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": node.ResourceVersion, "managedFields": kept}})
		if err != nil {
			return err
		}
		_, err = k.c.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("drop %s's claim on node %s: %w", manager, n, err)
	}
	return nil
}

// event files an Event on the node as the controller's recorder does: reason
// operand.UpgradeEventReason, in namespace default (a node has none).
func (r *rehearsal) event(ctx context.Context, n, message string) error {
	node, err := r.c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.NewTime(time.Now())
	_, err = r.c.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: n + ".", Namespace: metav1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: n, UID: node.UID},
		Reason:         operand.UpgradeEventReason, Message: message, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: operand.UpgradeManager},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("event on node %s: %w", n, err)
	}
	return nil
}

// pause writes the deploy labels as the helper that pauses them (the
// driver manager, the MIG manager), then waits until the pods of the
// DaemonSets that select on them are gone from the node
// (waitForPodsToTerminate), or, resuming, run there again.
func (k kit) pause(ctx context.Context, helper, n string, values map[string]string, resume bool) error {
	set := map[string]any{}
	for key, v := range values {
		set[key] = v
	}
	if err := k.patchNodeAs(ctx, n, helper, map[string]any{"metadata": map[string]any{"labels": set}}); err != nil {
		return err
	}
	dss, err := k.c.AppsV1().DaemonSets(k.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list DaemonSets: %w", err)
	}
	affected := slices.DeleteFunc(dss.Items, func(ds appsv1.DaemonSet) bool { return !selects(&ds, values) })
	what := "the paused operands' pods to go from " + n
	if resume {
		what = "the resumed operands' pods to run on " + n
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = "spec.nodeName=" + n
			return k.c.CoreV1().Pods(k.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "spec.nodeName=" + n
			return k.c.CoreV1().Pods(k.namespace).Watch(ctx, o)
		},
	}
	return k.wait(ctx, what, lw, &corev1.Pod{}, func(objs []any) bool {
		for i := range affected {
			running := slices.ContainsFunc(objs, func(o any) bool {
				p := o.(*corev1.Pod)
				return ownedBy(p, &affected[i]) && (resume && ready(p) || !resume)
			})
			if running != resume {
				return false
			}
		}
		return true
	})
}

// waitDriverPod waits until the node's only driver pod passes check.
func (r *rehearsal) waitDriverPod(ctx context.Context, n, what string, check func(*corev1.Pod) bool) error {
	return r.waitPod(ctx, n, r.ds, what, check)
}

// waitPod waits until the node's only pod of the DaemonSet passes check.
func (k kit) waitPod(ctx context.Context, n string, ds *appsv1.DaemonSet, what string, check func(*corev1.Pod) bool) error {
	lw := cache.NewListWatchFromClient(k.c.CoreV1().RESTClient(), "pods", k.namespace, fields.OneTermEqualSelector("spec.nodeName", n))
	return k.wait(ctx, what+" on "+n, lw, &corev1.Pod{}, func(objs []any) bool {
		var mine []*corev1.Pod
		for _, o := range objs {
			if p := o.(*corev1.Pod); ownedBy(p, ds) {
				mine = append(mine, p)
			}
		}
		return len(mine) == 1 && check(mine[0])
	})
}

// latestRevision waits until the DaemonSet controller has seen the
// DaemonSet's generation, then returns the hash of its highest-numbered
// ControllerRevision: the template a driver pod in sync carries, as the
// upgrade controller finds it (GetDaemonsetControllerRevisionHash).
func (r *rehearsal) latestRevision(ctx context.Context, ds *appsv1.DaemonSet) (string, error) {
	lw := cache.NewListWatchFromClient(r.c.AppsV1().RESTClient(), "daemonsets", r.o.Namespace, fields.OneTermEqualSelector("metadata.name", ds.Name))
	err := r.wait(ctx, "DaemonSet "+ds.Name+" to be seen at generation "+fmt.Sprint(ds.Generation), lw, &appsv1.DaemonSet{}, func(objs []any) bool {
		return len(objs) == 1 && objs[0].(*appsv1.DaemonSet).Status.ObservedGeneration >= ds.Generation
	})
	if err != nil {
		return "", err
	}
	revs, err := r.c.AppsV1().ControllerRevisions(r.o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list ControllerRevisions: %w", err)
	}
	var latest *appsv1.ControllerRevision
	for i := range revs.Items {
		rev := &revs.Items[i]
		if ref := metav1.GetControllerOf(rev); ref != nil && ref.UID == ds.UID && (latest == nil || rev.Revision > latest.Revision) {
			latest = rev
		}
	}
	if latest == nil {
		return "", fmt.Errorf("DaemonSet %s/%s has no ControllerRevision", r.o.Namespace, ds.Name)
	}
	return latest.Labels[operand.RevisionHashLabel], nil
}

// wait lists and watches until done, given the objects, says so; no
// polling. It gives up after the kit's timeout.
func (k kit) wait(ctx context.Context, what string, lw cache.ListerWatcher, obj runtime.Object, done func([]any) bool) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	var store cache.Store
	_, err := watchtools.UntilWithSync(ctx, lw, obj,
		func(s cache.Store) (bool, error) { store = s; return done(s.List()), nil },
		func(watch.Event) (bool, error) { return done(store.List()), nil })
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
