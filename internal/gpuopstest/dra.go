package gpuopstest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The DRA stack's objects as a test makes them on the real control plane:
// its scheduler allocates the claims from the slices, and no kubelet runs.

// DeviceClass creates the test's device class of whole GPUs, as the
// operator's gpu.nvidia.com (manifests/state-dra-driver/0400_deviceclass-gpu.yaml),
// under a name of the test's own: device classes are cluster-scoped.
func DeviceClass(t testing.TB, env *testcluster.Env) string {
	t.Helper()
	name := "t-" + env.ID + "." + snapshot.DRADriverName
	dc := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}}}}
	if _, err := env.Client.ResourceV1().DeviceClasses().Create(context.Background(), dc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.ResourceV1().DeviceClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// Publish creates the node's slices as the kubelet plugin's ResourceSlice
// controller does (rehearsal.ResourceSlice).
func Publish(t testing.TB, env *testcluster.Env, node *corev1.Node, slices []rehearsal.Slice) {
	t.Helper()
	for i, s := range slices {
		rs := rehearsal.ResourceSlice(node, i, s)
		if _, err := env.Client.ResourceV1().ResourceSlices().Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.ResourceV1().ResourceSlices().Delete(context.Background(), rs.Name, metav1.DeleteOptions{})
		})
	}
}

// ClaimPod creates a ResourceClaim asking n devices of the class and a pod
// holding it in env's namespace, bound to node when one is named
// (spec.nodeName: the scheduler leaves it alone and no kubelet runs it),
// else placed by the scheduler on the node its hostname selector names
// (onto any node when empty).
func ClaimPod(t testing.TB, env *testcluster.Env, name, class string, n int64, node, selects string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n}}}}}}
	if _, err := env.Client.ResourceV1().ResourceClaims(env.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}},
		Containers: []corev1.Container{{Name: "main", Image: "registry.example/cuda:1",
			Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}}
	if selects != "" {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: selects}
	}
	created, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}
