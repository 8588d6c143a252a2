package testcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations of hack/kwokctl.yaml's test stages: the state a pod is
// held in, the init container it waits in, and the reason and message of
// a pod the kubelet refused.
const (
	PodState      = "gpuops.test/pod-state"
	InitContainer = "gpuops.test/init-container"
	RejectReason  = "gpuops.test/reason"
	RejectMessage = "gpuops.test/message"
	RejectTime    = "gpuops.test/start-time"
)

// InitWaiting holds the pods of a template in its init container named
// (hack/kwokctl.yaml's init-waiting stage): those before it completed.
func InitWaiting(t *corev1.PodTemplateSpec, container string) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[PodState], t.Annotations[InitContainer] = "init-waiting", container
}

// Rejected is a pod bound to node and held Failed with the reason and
// message a kubelet gives a pod it refused at admission, at the time given
// (zero: as it is made; hack/kwokctl.yaml's rejected stage); its name
// starts with prefix.
func Rejected(prefix, node, reason, message string, at time.Time, spec corev1.PodSpec) *corev1.Pod {
	spec.NodeName = node
	a := map[string]string{PodState: "rejected", RejectReason: reason, RejectMessage: message}
	if !at.IsZero() {
		a[RejectTime] = at.UTC().Format(time.RFC3339)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Annotations: a}, Spec: spec}
}

// GPUs are the resources of a container that asks for n nvidia.com/gpu.
func GPUs(n int64) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}}
}

// GPUPod is a user's pod bound to node, asking for n GPUs.
func GPUPod(name, node string, n int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.example/train:1", Resources: GPUs(n)}}}}
}

// OtherNamespace is a second namespace of the test's, <Namespace>-<suffix>
// (the users' pods of a test live in one), made on first use and deleted
// when the test ends.
func (e *Env) OtherNamespace(t testing.TB, suffix string) string {
	t.Helper()
	name := e.Namespace + "-" + suffix
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelTestID: e.ID}}}
	_, err := e.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		t.Cleanup(func() { _ = e.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	case !apierrors.IsAlreadyExists(err):
		t.Fatal(err)
	}
	return name
}

// Warning records a Warning Event on the pod as the kubelet of node
// records one: a reason and message it has retried count times, last at
// at.
func (e *Env) Warning(t testing.TB, p *corev1.Pod, node, reason, message string, count int32, at time.Time) {
	t.Helper()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: p.Name + "."},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1"},
		Reason:         reason, Message: message, Type: corev1.EventTypeWarning, Count: count,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Source: corev1.EventSource{Component: "kubelet", Host: node},
	}
	if _, err := e.Client.CoreV1().Events(p.Namespace).Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
