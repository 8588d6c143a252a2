package read_test

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// gpuPod is a pod of the test asking gpus nvidia.com/gpu (none: only a cpu)
// and holding the claims named.
func gpuPod(name string, gpus int64, claims ...string) *corev1.Pod {
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if gpus > 0 {
		limits["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/cuda:1",
			Resources: corev1.ResourceRequirements{Limits: limits}}}},
	}
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: c, ResourceClaimName: &c})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: c})
	}
	return p
}

// TestGPUPodsReadsTheOperatorsGPUPods reads, on the real control plane, the
// GPU pods of a namespace by the operator's rule, the pods the kubelet
// refused at admission, and the claims waiting for a GPU class or a class
// that does not exist; the same with a JSON client, and, for a user who may
// list pods and nothing else, the pods with a note for each kind it may not
// list.
func TestGPUPodsReadsTheOperatorsGPUPods(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()
	node := env.NodeName("gpus")
	env.AddNode(t, node, nil, testcluster.WithCapacity(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}))

	gpuClass, fpgaClass := "gpu-"+env.ID, "fpga-"+env.ID
	for name, expr := range map[string]string{
		gpuClass:  "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
		fpgaClass: "device.driver == 'fpga.example.com'",
	} {
		c := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}}}
		if _, err := env.Client.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Client.ResourceV1().DeviceClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	claims := env.Client.ResourceV1().ResourceClaims(env.Namespace)
	for name, class := range map[string]string{"wait-gpu": gpuClass, "wait-fpga": fpgaClass, "wait-missing": "missing-" + env.ID, "held": fpgaClass} {
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}}}}}
		if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// "held" is allocated a GPU by the DRA driver, whatever its class says.
	held, err := claims.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: "gpu.nvidia.com", Pool: node, Device: "gpu-0"}}}}
	if _, err := claims.UpdateStatus(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	pods := env.Client.CoreV1().Pods(env.Namespace)
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	train := gpuPod("train", 2)
	train.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	create(train)
	create(gpuPod("big", 16))
	create(gpuPod("web", 0))
	for _, c := range []string{"wait-gpu", "wait-fpga", "wait-missing", "held"} {
		create(gpuPod("dra-"+c, 0, c))
	}
	// Pods that ended, bound to a node no kubelet runs: their status is the
	// test's to write.
	gone := env.NodeName("gone")
	refusal := "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
	for name, st := range map[string]corev1.PodStatus{
		"done":    {Phase: corev1.PodSucceeded},
		"evicted": {Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."},
		"refused": {Phase: corev1.PodFailed, Reason: snapshot.UnexpectedAdmissionError, Message: refusal},
	} {
		p := gpuPod(name, 1)
		p.Spec.NodeName = gone
		create(p)
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = st
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitForPods(t, env.Namespace, func(ps []corev1.Pod) bool {
		for _, p := range ps {
			if p.Name == "train" && p.Status.Phase != corev1.PodRunning {
				return false
			}
			if wp, _ := snapshot.GPUPodFrom(&p); p.Name == "big" && wp.Unscheduled == "" {
				return false
			}
		}
		return true
	})

	cf := kube.NewFlags()
	cf.KubeConfig = &env.Kubeconfig
	clients, err := kube.Connect(cf)
	if err != nil {
		t.Fatal(err)
	}
	o := read.WorkloadOptions{Namespace: env.Namespace}
	got, err := read.GPUPods(ctx, clients.Kube, o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got.Pods {
		names = append(names, p.Name)
	}
	if want := []string{"big", "dra-held", "dra-wait-gpu", "dra-wait-missing", "train"}; !reflect.DeepEqual(names, want) {
		t.Errorf("GPU pods %v, want %v", names, want)
	}
	if want := []snapshot.RejectedPod{{Namespace: env.Namespace, Name: "refused", Node: gone, Message: refusal}}; !reflect.DeepEqual(got.Rejected, want) {
		t.Errorf("rejected %+v, want %+v", got.Rejected, want)
	}
	if got.Notes != nil {
		t.Errorf("notes %q, want none", got.Notes)
	}
	for _, p := range got.Pods {
		switch {
		case p.Name == "train" && (p.Node != node || p.Requests["nvidia.com/gpu"] != 2 || p.Phase != corev1.PodRunning):
			t.Errorf("train read as %+v", p)
		case p.Name == "big" && (p.Node != "" || p.Unscheduled == ""):
			t.Errorf("big read as %+v", p)
		}
	}

	// A JSON client reads the same.
	if asJSON, err := read.GPUPods(ctx, jsonClient(env), o); err != nil || !reflect.DeepEqual(asJSON, got) {
		t.Errorf("as JSON: %v\n got %+v\nwant %+v", err, asJSON, got)
	}

	// A user who may list pods and nothing else: the pods, and a note for
	// each kind; the claims unread, each claim pod is a GPU pod.
	account := "pods-only"
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: account}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: account}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: env.Namespace}}}
	if _, err := env.Client.RbacV1().Roles(env.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().RoleBindings(env.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env.AccountKubeconfig(t, env.Namespace, account))
	if err != nil {
		t.Fatal(err)
	}
	limited, err := read.GPUPods(ctx, kubernetes.NewForConfigOrDie(cfg), o)
	if err != nil {
		t.Fatal(err)
	}
	wantNotes := []string{
		"the user may not list resourceclaims.resource.k8s.io: pods holding a claim are judged GPU pods",
		"the user may not list deviceclasses.resource.k8s.io: a claim waiting for its devices is not judged by its class",
	}
	if !reflect.DeepEqual(limited.Notes, wantNotes) || len(limited.Pods) != 6 || len(limited.Rejected) != 1 {
		t.Errorf("as a user who may list pods only: %d pods, %d rejected, notes %q; want 6, 1, %q", len(limited.Pods), len(limited.Rejected), limited.Notes, wantNotes)
	}
}
