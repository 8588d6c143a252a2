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

// eachNamedNode reads the named nodes out of one LIST of every node and
// calls visit(i, node) for names[i]. A GET per node was paced by the
// client's rate limit (pkg/kube): 10 s of a 103 s `gpuops up` at 1,000 nodes
// (bench/RESULTS.md), where the LIST takes about a second. The list comes in
// pages, so only a page of nodes is held at a time: visit must not keep node.
// It returns the error of the first name, in order, that failed: visit's, or
// a NodeNotFoundError for a node that does not exist.
func eachNamedNode(ctx context.Context, c kubernetes.Interface, names []string, visit func(i int, node *corev1.Node) error) error {
	at := make(map[string]int, len(names))
	for i, n := range names {
		at[n] = i
	}
	errs := make([]error, len(names)) // each not found until the list has it
	for i, n := range names {
		errs[i] = &NodeNotFoundError{Node: n}
	}
	list := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, o)
	})
	err := list.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		node := o.(*corev1.Node)
		if i, ok := at[node.Name]; ok {
			errs[i] = visit(i, node)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
