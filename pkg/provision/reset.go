package provision

import (
	"context"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/settle"
)

// Reset removes what gpuops applied and nothing else: the labels it owns on
// any node (a label that another manager also owns stays), the roster's
// DaemonSets that only gpuops shaped, and the namespace if gpuops created it
// and nothing but those DaemonSets' pods lives there. It waits until what it
// deleted is gone, so an Up right after starts from a clean slate. k8s/ and
// out/ are left alone: they record what was done.
func Reset(ctx context.Context, c kubernetes.Interface, ns string, opts Options) error {
	p, err := planReset(ctx, c, ns)
	if err != nil {
		return err
	}
	// The guard goes first: taking gpuops's labels off may leave a label that
	// another manager set without what it needs, which the guard would refuse.
	if err := deleteGuard(ctx, c, p.guardPolicy, p.guardBinding, opts); err != nil {
		return err
	}
	for _, d := range p.daemonSets {
		err := c.AppsV1().DaemonSets(ns).Delete(ctx, d.name, metav1.DeleteOptions{
			// the DaemonSet gpuops judged, not one made since under the same name
			Preconditions: &metav1.Preconditions{UID: &d.uid},
		})
		if err != nil && !notFound(err) {
			return fmt.Errorf("delete DaemonSet %s/%s: %w", ns, d.name, err)
		}
		opts.changed(ObjectChange{Object: "daemonset.apps/" + d.name, Action: "deleted"})
	}
	if p.deleteNamespace {
		if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !notFound(err) {
			return fmt.Errorf("delete namespace %s: %w", ns, err)
		}
		opts.changed(ObjectChange{Object: "namespace/" + ns, Action: "deleted"})
	}
	unlabelled := make([]bool, len(p.nodes))
	err = forEach(ctx, len(p.nodes), func(ctx context.Context, i int) error {
		// Applying no labels gives up gpuops's claim on them; the API server
		// removes each one that no other manager holds.
		if _, err := c.CoreV1().Nodes().Apply(ctx, corev1ac.Node(p.nodes[i]), applyOptions(false)); err != nil {
			return fmt.Errorf("unlabel node %s: %w", p.nodes[i], err)
		}
		unlabelled[i] = true
		return nil
	})
	for i, n := range p.nodes {
		if unlabelled[i] {
			opts.changed(ObjectChange{Object: "node/" + n, Action: "unlabelled"})
		}
	}
	if err != nil {
		return err
	}
	for _, k := range p.kept {
		opts.changed(k)
	}
	return p.waitGone(ctx, c, opts)
}

type resetPlan struct {
	namespace       string
	nodes           []string
	daemonSets      []ownedDaemonSet
	deleteNamespace bool
	kept            []ObjectChange // what gpuops applied to but leaves, and why
	// the guard's policy and binding, where gpuops installed them
	guardPolicy  *admissionv1.ValidatingAdmissionPolicy
	guardBinding *admissionv1.ValidatingAdmissionPolicyBinding
}

type ownedDaemonSet struct {
	name string
	uid  types.UID
}

// planReset finds what gpuops owns. It changes nothing.
func planReset(ctx context.Context, c kubernetes.Interface, ns string) (*resetPlan, error) {
	p := &resetPlan{namespace: ns}
	policy, binding, err := Guard(ctx, c)
	switch {
	case apierrors.IsForbidden(err):
		// who may not read admission policies cannot have installed the guard
	case err != nil:
		return nil, err
	default:
		if policy != nil && appliedByGPUOps(policy) {
			p.guardPolicy = policy
		}
		if binding != nil && appliedByGPUOps(binding) {
			p.guardBinding = binding
		}
	}
	err = eachNode(ctx, c, func(n *corev1.Node) error {
		mine, err := corev1ac.ExtractNode(n, FieldManager)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if len(mine.Labels) > 0 {
			p.nodes = append(p.nodes, n.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	nsObj, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if notFound(err) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list DaemonSets in %s: %w", ns, err)
	}
	deleting := map[types.UID]bool{}
	others := 0 // DaemonSets of the namespace that stay
	for _, ds := range dss.Items {
		inRoster := slices.ContainsFunc(operand.Lab, func(o operand.Operand) bool { return o.DaemonSet == ds.Name })
		mine, err := owned(ds.ManagedFields, FieldManager)
		if err != nil {
			return nil, fmt.Errorf("DaemonSet %s/%s: %w", ns, ds.Name, err)
		}
		shapers := otherManagers(ds.ManagedFields)
		switch {
		case !inRoster || mine.Empty():
			others++
		case len(shapers) > 0:
			others++
			p.kept = append(p.kept, ObjectChange{Object: "daemonset.apps/" + ds.Name, Action: "kept", Why: fmt.Sprintf("also managed by %q", shapers)})
		default:
			p.daemonSets = append(p.daemonSets, ownedDaemonSet{name: ds.Name, uid: ds.UID})
			deleting[ds.UID] = true
		}
	}

	created, err := corev1ac.ExtractNamespace(nsObj, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	if _, mine := created.Labels[operand.ManagedByLabel]; !mine {
		return p, nil // gpuops did not create it
	}
	foreignPods := false
	err = eachPod(ctx, c, ns, func(pod *corev1.Pod) { foreignPods = foreignPods || !deleting[controllerUID(pod)] })
	if err != nil {
		return nil, err
	}
	if others > 0 || foreignPods {
		p.kept = append(p.kept, ObjectChange{Object: "namespace/" + ns, Action: "kept", Why: "it holds workloads gpuops did not create"})
		return p, nil
	}
	p.deleteNamespace = true
	return p, nil
}

// otherManagers lists the managers other than gpuops that shaped the object
// (status writers such as the DaemonSet controller do not count).
func otherManagers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		if e.Manager != FieldManager && e.Subresource == "" && !slices.Contains(out, e.Manager) {
			out = append(out, e.Manager)
		}
	}
	slices.Sort(out)
	return out
}

func controllerUID(p *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.UID
	}
	return ""
}

// waitGone waits, by watching, until the namespace is gone if it was
// deleted, else until no pod of a deleted DaemonSet is left.
func (p *resetPlan) waitGone(ctx context.Context, c kubernetes.Interface, opts Options) error {
	parent := ctx
	timeout := opts.settle().Timeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lw cache.ListerWatcher
	var obj runtime.Object
	var gone func(cache.Store) bool
	what := ""
	switch {
	case p.deleteNamespace:
		lw = cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "namespaces", metav1.NamespaceAll,
			fields.OneTermEqualSelector("metadata.name", p.namespace))
		obj, what = &corev1.Namespace{}, "namespace "+p.namespace
		gone = func(s cache.Store) bool { return len(s.ListKeys()) == 0 }
	case len(p.daemonSets) > 0:
		deleted := map[types.UID]bool{}
		for _, d := range p.daemonSets {
			deleted[d.uid] = true
		}
		lw = cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", p.namespace, fields.Everything())
		obj, what = &corev1.Pod{}, "the pods of the deleted DaemonSets"
		gone = func(s cache.Store) bool {
			return !slices.ContainsFunc(s.List(), func(o any) bool { return deleted[controllerUID(o.(*corev1.Pod))] })
		}
	default:
		return nil
	}
	var store cache.Store
	_, err := watchtools.UntilWithSync(ctx, lw, obj,
		func(s cache.Store) (bool, error) { store = s; return gone(s), nil },
		func(watch.Event) (bool, error) { return gone(store), nil })
	switch {
	case err == nil:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("%w while waiting for %s to be gone", settle.ErrInterrupted, what)
	}
	return fmt.Errorf("%s still there after %s", what, timeout)
}
