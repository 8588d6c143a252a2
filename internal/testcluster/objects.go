package testcluster

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DaemonSet returns a minimal DaemonSet for tests: its pods carry app=<name>,
// go to the nodes that have every label of nodeSelector, and each requests
// memory (so a node short of it keeps its pod Pending).
func DaemonSet(ns, name string, nodeSelector map[string]string, memory string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: nodeSelector,
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "registry.example/fake:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceMemory: resource.MustParse(memory),
						}},
					}},
				},
			},
		},
	}
}
