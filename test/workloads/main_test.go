// Package workloads_test tests the workload's side (gpuops capacity) on
// the real control plane: its scheduler binds the GPU pods, KWOK runs
// them on fake nodes that advertise GPUs.
package workloads_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// pod is a pod asking n of a device resource, placed on node when one is
// named (by its hostname label: the scheduler still binds it).
func pod(name, node, resourceName string, n int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/cuda:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(resourceName): *resource.NewQuantity(n, resource.DecimalSI)}}}}},
	}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	return p
}

// create creates the pods in namespace ns.
func create(t *testing.T, env *testcluster.Env, ns string, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// devices is a node option: capacity and allocatable of a device resource.
func devices(resourceName string, capacity, allocatable int64) testcluster.NodeOption {
	return func(n *corev1.Node) {
		n.Status.Capacity[corev1.ResourceName(resourceName)] = *resource.NewQuantity(capacity, resource.DecimalSI)
		n.Status.Allocatable[corev1.ResourceName(resourceName)] = *resource.NewQuantity(allocatable, resource.DecimalSI)
	}
}
