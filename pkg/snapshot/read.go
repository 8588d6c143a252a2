package snapshot

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// Options says what to read besides nodes and pods.
type Options struct {
	NodeSelector string // label selector narrowing the nodes judged; empty means all
	DaemonSets   bool   // also list the namespace's DaemonSets
	PageSize     int64  // objects per LIST page; 0 means DefaultPageSize
}

// DefaultPageSize is how many objects one LIST page carries. Pages keep only one
// page of full API objects in memory at a time (each is converted to the
// compact types before the next is decoded), while a 25,000-pod namespace
// still takes only 50 round trips.
const DefaultPageSize = 500

// Read takes a snapshot with a constant number of LIST calls per page of
// objects, whatever the cluster size: nodes, the namespace's pods (and its
// DaemonSets when asked), listed concurrently and paged. Each list is one
// consistent view (the pages of a list share its resourceVersion).
func Read(ctx context.Context, c kubernetes.Interface, namespace string, opts Options) (*Snapshot, error) {
	s := &Snapshot{Namespace: namespace}
	page := opts.PageSize
	if page <= 0 {
		page = DefaultPageSize
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return each(ctx, c.CoreV1().Nodes().List, metav1.ListOptions{LabelSelector: opts.NodeSelector, Limit: page},
			func(n *corev1.Node) { s.Nodes = append(s.Nodes, NodeFrom(n)) },
			"list nodes")
	})
	g.Go(func() error {
		return each(ctx, c.CoreV1().Pods(namespace).List, metav1.ListOptions{Limit: page},
			func(p *corev1.Pod) { s.Pods = append(s.Pods, PodFrom(p)) },
			"list pods in namespace "+namespace)
	})
	if opts.DaemonSets {
		g.Go(func() error {
			return each(ctx, c.AppsV1().DaemonSets(namespace).List, metav1.ListOptions{Limit: page},
				func(d *appsv1.DaemonSet) { s.DaemonSets = append(s.DaemonSets, DaemonSetFrom(d)) },
				"list daemonsets in namespace "+namespace)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return s, nil
}

// each lists page by page (opts.Limit objects a page) and calls fn on every item, in the server's order.
// The next page is fetched while the current one is converted.
func each[T any, L runtime.Object](ctx context.Context, list func(context.Context, metav1.ListOptions) (L, error),
	opts metav1.ListOptions, fn func(*T), what string) error {
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, o) })
	p.PageBufferSize = 1
	err := p.EachListItem(ctx, opts, func(o runtime.Object) error {
		item, ok := o.(any).(*T)
		if !ok {
			return fmt.Errorf("unexpected %T in list", o)
		}
		fn(item)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
