package dra_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

// claimPod creates a ResourceClaim asking n devices of the class and a pod
// holding it, bound to node when one is named (spec.nodeName: the
// scheduler leaves it alone and no kubelet runs it), else placed by the
// scheduler on the node its hostname selector names (onto any node when
// empty).
func claimPod(t *testing.T, env *testcluster.Env, name, class string, n int64, node, selects string) *corev1.Pod {
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

// whyJSON runs gpuops why on the pod as a user of the DRA stack in the
// test's namespace does, and returns its one answer.
func whyJSON(t *testing.T, env *testcluster.Env, pod string, code int) workload.Answer {
	t.Helper()
	r := gpuopstest.On(env).Want(t, code, "why", pod, "--operator-namespace", env.Namespace, "--discover", "--stuck-after", "1ns", "-o", "json")
	var got workload.WhyReport
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got.Answers) != 1 {
		t.Fatalf("why %s -o json: %v\n%s%s", pod, err, r.Stdout, r.Stderr)
	}
	return got.Answers[0]
}

// saidOf waits until the scheduler has said why it leaves the pod
// Pending, and returns its words.
func saidOf(t *testing.T, env *testcluster.Env, name string) string {
	t.Helper()
	var said string
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if p.Name == name && c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
					said = c.Message
					return true
				}
			}
		}
		return false
	})
	return said
}

// TestWhyDRANodeByNode: a pod whose claim of 2 GPUs waits, on the real
// scheduler, which says only "cannot allocate all claims" of every node:
// gpuops why says per node what the scheduler does not — a node whose
// devices are all allocated, one whose free devices are tainted, one that
// publishes none, one whose pool is not whole (node-unusable carrying
// health's devices-tainted, devices-not-published, pool-incomplete). A node
// with free devices added, the scheduler places the pod there and why says
// it runs. A claim of a device class that does not exist is
// device-class-unknown, naming the classes of GPUs that do; a pod bound
// where the kubelet cannot prepare its claim (its Event as the kubelet
// records it) is prepare-failed. Not parallel: the nodes carry the
// operator's deploy labels.
func TestWhyDRANodeByNode(t *testing.T) {
	env := testcluster.New(t)
	stack(t, env)
	class := "t-" + env.ID + "." + snapshot.DRADriverName // stack's (deviceClass)
	labels := map[string]string{operand.GPUPresent: "true"}
	for _, o := range draStack {
		labels[operand.LabelPrefix+o] = "true"
	}
	dra := map[string][]rehearsal.Slice{
		"full":       {{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 4)}},
		"tainted":    {{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 4, rehearsal.FatalXID, rehearsal.FatalXID, rehearsal.FatalXID)}},
		"bare":       nil,
		"incomplete": {{Generation: 2, Count: 2, Devices: rehearsal.Devices("gpu", "gpu", 4)}},
	}
	for name, slices := range dra {
		publish(t, env, env.AddNode(t, env.NodeName(name), labels), slices)
	}
	full := env.NodeName("full")
	validator, plugin := daemonSet(t, operand.DRAValidator), daemonSet(t, operand.DRADriver)
	claimPod(t, env, "holder", class, 3, "", full)
	// The DRA validator holds a device of each node it runs on: full's
	// fourth, tainted's one untainted.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running := map[string]bool{}
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running[p.Name] = true
				if o := p.Labels["app"]; o != "" {
					running[o+"@"+p.Spec.NodeName] = true
				}
			}
		}
		ok := running["holder"]
		for _, n := range []string{"full", "tainted"} {
			ok = ok && running[validator+"@"+env.NodeName(n)]
		}
		for n := range dra {
			ok = ok && running[plugin+"@"+env.NodeName(n)]
		}
		return ok
	})
	train := claimPod(t, env, "train", class, 2, "", "")
	said := saidOf(t, env, train.Name)
	if !strings.Contains(said, "cannot allocate all claims") {
		t.Fatalf("the scheduler said %q, want cannot allocate all claims", said)
	}
	a := whyJSON(t, env, "train", 1)
	got := map[string]string{}
	for _, n := range a.Nodes {
		for _, r := range n.Reasons {
			code := r.Code
			if r.Health != nil {
				code += " carrying " + r.Health.Code
			}
			got[strings.TrimPrefix(n.Node, "t-"+env.ID+"-")] = code
		}
	}
	want := map[string]string{
		"full":       workload.AllAllocated,
		"tainted":    workload.NodeUnusable + " carrying " + health.DevicesTainted,
		"bare":       workload.NodeUnusable + " carrying " + health.DevicesNotPublished,
		"incomplete": workload.NodeUnusable + " carrying " + health.PoolIncomplete,
	}
	for n, code := range want {
		if got[n] != code {
			t.Errorf("%s: %q, want %q (all: %v)", n, got[n], code, got)
		}
	}
	if a.State != workload.Pending || a.Code != workload.NodeUnusable || a.Said != said {
		t.Errorf("why train: %s %s %q said %q, want Pending node-unusable, said %q", a.State, a.Code, a.Message, a.Said, said)
	}

	free := env.NodeName("free")
	publish(t, env, env.AddNode(t, free, labels), []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8)}})
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		for i := range pods {
			if pods[i].Name == train.Name {
				return testcluster.PodRunningOn(&pods[i], free)
			}
		}
		return false
	})
	if a := whyJSON(t, env, "train", 0); a.State != workload.Running || a.Code != "" || a.Node != free {
		t.Errorf("why train: %+v, want Running on %s", a, free)
	}

	t.Run("device class unknown", func(t *testing.T) {
		missing := "t-" + env.ID + ".nope.example.com"
		claimPod(t, env, "lost", missing, 1, "", "")
		said := saidOf(t, env, "lost")
		a := whyJSON(t, env, "lost", 1)
		if a.Code != workload.DeviceClassUnknown || !strings.Contains(a.Message, "asks device class "+missing+", which does not exist") ||
			!strings.Contains(a.Message, class) || !strings.Contains(said, "device class "+missing+" does not exist") {
			t.Errorf("why lost: %s %q (the scheduler said %q), want %s naming %s", a.Code, a.Message, said, workload.DeviceClassUnknown, class)
		}
	})

	t.Run("prepare failed", func(t *testing.T) {
		// The kubelet's Event when the DRA driver's kubelet plugin has not
		// registered (kubernetes v1.37.2 pkg/kubelet/kuberuntime/kuberuntime_manager.go,
		// pkg/kubelet/cm/dra/manager.go, pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go).
		gone := env.NodeName("gone")
		p := claimPod(t, env, "prep", class, 1, gone, "")
		msg := "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver gpu.nvidia.com is not registered"
		env.Warning(t, p, gone, snapshot.FailedPrepareDynamicResources, msg, 3, time.Now())
		a := whyJSON(t, env, "prep", 1)
		if a.State != workload.Stuck || a.Code != workload.PrepareFailed || a.Said != snapshot.FailedPrepareDynamicResources+": "+msg {
			t.Errorf("why prep: %+v", a)
		}
	})
}

// daemonSet is the name of the operand's DaemonSet, as stack makes it.
func daemonSet(t *testing.T, name string) string {
	o, err := operand.Lookup(operand.Real, name)
	if err != nil {
		t.Fatal(err)
	}
	return o.DaemonSet
}
