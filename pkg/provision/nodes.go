package provision

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// eachNamedNode reads the named nodes out of one LIST of every node and calls
// visit(i, node) for names[i]. A GET per node was paced by the client's rate
// limit (pkg/kube), a tenth of `gpuops up` at 1,000 nodes where one LIST takes
// about a second (docs/scale.md, "`gpuops up`"). The list comes in pages, so
// only a page of nodes is held at a time: visit must not keep node. It returns
// the error of the first name, in order, that failed: visit's, or a
// NodeNotFoundError for a node that does not exist.
func eachNamedNode(ctx context.Context, c kubernetes.Interface, names []string, visit func(i int, node *corev1.Node) error) error {
	at := make(map[string]int, len(names))
	for i, n := range names {
		at[n] = i
	}
	errs := make([]error, len(names)) // each not found until the list has it
	for i, n := range names {
		errs[i] = &NodeNotFoundError{Node: n}
	}
	err := eachNode(ctx, c, func(node *corev1.Node) error {
		if i, ok := at[node.Name]; ok {
			errs[i] = visit(i, node)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// eachNode calls visit for every node of the cluster, listed in pages: a
// fleet's nodes can be thousands. It stops at visit's first error. A visit
// that keeps node keeps its page.
func eachNode(ctx context.Context, c kubernetes.Interface, visit func(*corev1.Node) error) error {
	list := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, o)
	})
	var visitErr error
	err := list.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		visitErr = visit(o.(*corev1.Node))
		return visitErr
	})
	switch {
	case visitErr != nil:
		return visitErr
	case err != nil:
		return fmt.Errorf("list nodes: %w", err)
	}
	return nil
}

// eachPod calls visit for every pod of namespace ns, listed in pages: the
// lab's DaemonSets run a pod on each of thousands of nodes.
func eachPod(ctx context.Context, c kubernetes.Interface, ns string, visit func(*corev1.Pod)) error {
	list := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(ns).List(ctx, o)
	})
	err := list.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		visit(o.(*corev1.Pod))
		return nil
	})
	if err != nil {
		return fmt.Errorf("list pods in %s: %w", ns, err)
	}
	return nil
}
