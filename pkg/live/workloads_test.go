package live

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// serve --workloads watches every pod of the cluster: the store keeps a
// GPU pod's model, and of any other pod its key alone; the trim is
// idempotent, as client-go asks of a transform.
func TestTrimGPUPod(t *testing.T) {
	gpus := corev1.ResourceList{"nvidia.com/gpu": apiresource.MustParse("2")}
	gpu := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: gpus}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "8"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx"}}}}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want bool // kept as a GPU pod
	}{{gpu, true}, {web, false}} {
		obj, err := trimGPUPod(tc.pod)
		if err != nil {
			t.Fatal(err)
		}
		s := obj.(*stored[*snapshot.GPUPod])
		if key, _ := cache.MetaNamespaceKeyFunc(s); key != tc.pod.Namespace+"/"+tc.pod.Name || s.ResourceVersion != tc.pod.ResourceVersion {
			t.Errorf("%s: keyed %q at %q", tc.pod.Name, key, s.ResourceVersion)
		}
		if (s.Of != nil) != tc.want || (s.Of != nil && s.Of.Requests["nvidia.com/gpu"] != 2) {
			t.Errorf("%s: kept %+v", tc.pod.Name, s.Of)
		}
		if again, _ := trimGPUPod(s); again != obj {
			t.Errorf("%s: trimmed again", tc.pod.Name)
		}
	}
}
