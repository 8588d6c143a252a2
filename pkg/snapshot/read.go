package snapshot

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Options says what to read besides nodes and pods.
type Options struct {
	NodeSelector string // label selector narrowing the nodes judged; empty means all
	DaemonSets   bool   // also list the namespace's DaemonSets
}

// Read takes a snapshot with a constant number of LIST calls, whatever the
// cluster size: one for nodes, one for the namespace's pods (and one for its
// DaemonSets when asked).
func Read(ctx context.Context, c kubernetes.Interface, namespace string, opts Options) (*Snapshot, error) {
	s := &Snapshot{Namespace: namespace}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: opts.NodeSelector})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	s.Nodes = make([]Node, 0, len(nodes.Items))
	for i := range nodes.Items {
		s.Nodes = append(s.Nodes, NodeFrom(&nodes.Items[i]))
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods in namespace %s: %w", namespace, err)
	}
	s.Pods = make([]Pod, 0, len(pods.Items))
	for i := range pods.Items {
		s.Pods = append(s.Pods, PodFrom(&pods.Items[i]))
	}
	if opts.DaemonSets {
		dss, err := c.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list daemonsets in namespace %s: %w", namespace, err)
		}
		for i := range dss.Items {
			d := &dss.Items[i]
			s.DaemonSets = append(s.DaemonSets, DaemonSet{
				Name:                   d.Name,
				NodeSelector:           d.Spec.Template.Spec.NodeSelector,
				Affinity:               d.Spec.Template.Spec.Affinity,
				Tolerations:            d.Spec.Template.Spec.Tolerations,
				DesiredNumberScheduled: d.Status.DesiredNumberScheduled,
			})
		}
	}
	return s, nil
}
