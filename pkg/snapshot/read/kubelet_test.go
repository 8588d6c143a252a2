package read

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// A trimmed Warning Event keeps what WarningFrom reads; a trimmed pod of
// another namespace what DeviceRequests reads, and not the rest of its
// containers.
func TestTrimWarningAndHolder(t *testing.T) {
	at := metav1.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "nvidia-operator-validator-x"}, Reason: "FailedCreatePodSandBox",
		Type: "Warning", Message: `no runtime for "nvidia" is configured`, Count: 12, LastTimestamp: at, Source: corev1.EventSource{Component: "kubelet", Host: "gpu-1"}}
	var got corev1.Event
	decodeTrimmed(t, &e, &got, warningFields, nil)
	if want, have := snapshot.WarningFrom(&e), snapshot.WarningFrom(&got); want != have || have.Count != 12 || have.Reason != e.Reason ||
		got.InvolvedObject.Name != e.InvolvedObject.Name || got.Source.Host != "" {
		t.Errorf("trimmed warning %+v (source %+v), want %+v", have, got.Source, want)
	}

	gpus := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train-0", Namespace: "ml", Labels: map[string]string{"app": "train"}},
		Spec: corev1.PodSpec{NodeName: "gpu-1",
			InitContainers: []corev1.Container{{Name: "fetch", Image: "registry.example/fetch", Resources: gpus}},
			Containers:     []corev1.Container{{Name: "main", Image: "registry.example/train", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}, Resources: gpus}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	var trimmed corev1.Pod
	decodeTrimmed(t, &p, &trimmed, holderFields, nil)
	if want, have := snapshot.DeviceRequests(&p.Spec), snapshot.DeviceRequests(&trimmed.Spec); !reflect.DeepEqual(want, have) || have["nvidia.com/gpu"] != 4 ||
		trimmed.Name != "train-0" || trimmed.Namespace != "ml" || trimmed.Status.Phase != corev1.PodRunning {
		t.Errorf("trimmed holder %+v: devices %v, want %v", trimmed.ObjectMeta, have, want)
	}
	if c := trimmed.Spec.Containers[0]; c.Image != "" || c.Env != nil || trimmed.Labels != nil {
		t.Errorf("trimmed holder kept more than its devices: %+v", c)
	}
}
