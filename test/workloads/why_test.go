package workloads_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

const gpu = "nvidia.com/gpu"

// runs waits until the pod runs on the node.
func runs(t *testing.T, env *testcluster.Env, name, node string) {
	t.Helper()
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Name == name {
				return testcluster.PodRunningOn(&p, node)
			}
		}
		return false
	})
}

// why runs gpuops why on the pod (every pod already past --stuck-after)
// and returns its one answer, checking the exit: 1 for a finding, else 0.
func why(t *testing.T, env *testcluster.Env, pod string) workload.Answer {
	t.Helper()
	r := gpuopstest.On(env).Run(t, "why", pod, "--stuck-after", "1ns", "-o", "json")
	var got workload.WhyReport
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got.Answers) != 1 {
		t.Fatalf("why %s -o json: exit %d, %v\n%s%s", pod, r.Code, err, r.Stdout, r.Stderr)
	}
	a := got.Answers[0]
	if want := map[bool]int{true: 1, false: 0}[a.Finding()]; r.Code != want {
		t.Errorf("why %s: exit %d, want %d", pod, r.Code, want)
	}
	return a
}

// TestWhyEachSchedulingCause: per cause, on the real scheduler, a node
// that would take a GPU pod but for that cause, the pod it leaves Pending
// (gpuops why names the cause, quoting the scheduler) and a pod that does
// fit and runs (gpuops why says so).
func TestWhyEachSchedulingCause(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the nodes and the pods that hold GPUs, and returns
		// the pending pod, the one that runs and where.
		setup   func(t *testing.T, env *testcluster.Env) (pending, fits *corev1.Pod, on string)
		code    string
		says    string
		carries string // the health code the answer carries, if any
	}{
		{name: "all allocated", code: workload.AllAllocated, says: "8 of its 8 nvidia.com/gpu held by 2 pod(s)", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("full")
			env.AddNode(t, n, nil, devices(gpu, 8, 8))
			create(t, env, env.Namespace, pod("holder", n, gpu, 6))
			runs(t, env, "holder", n)
			return pod("asks-4", "", gpu, 4), pod("asks-2", "", gpu, 2), n
		}},
		{name: "unhealthy GPUs", code: workload.GPUsUnhealthy, says: "2 of its 8 nvidia.com/gpu unhealthy", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("sick")
			env.AddNode(t, n, nil, devices(gpu, 8, 6))
			create(t, env, env.Namespace, pod("holder", n, gpu, 3))
			runs(t, env, "holder", n)
			return pod("asks-4", "", gpu, 4), pod("asks-1", "", gpu, 1), n
		}},
		{name: "cordoned", code: workload.Cordoned, says: "cordoned, by", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("cordoned")
			env.AddNode(t, n, nil, devices(gpu, 8, 8), testcluster.Unschedulable())
			fits := pod("tolerates-cordon", "", gpu, 1)
			fits.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			return pod("asks-1", "", gpu, 1), fits, n
		}},
		{name: "untolerated taint", code: workload.UntoleratedTaint, says: "taint dedicated=infer:NoSchedule", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("tainted")
			env.AddNode(t, n, nil, devices(gpu, 8, 8), testcluster.WithTaints(corev1.Taint{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}))
			fits := pod("tolerates", "", gpu, 1)
			fits.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infer", Effect: corev1.TaintEffectNoSchedule}}
			return pod("asks-1", "", gpu, 1), fits, n
		}},
		{name: "selector mismatch", code: workload.SelectorMismatch, says: "nodeSelector example.com/zone=b, the node's example.com/zone =a", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("zone-a")
			env.AddNode(t, n, map[string]string{"example.com/zone": "a"}, devices(gpu, 8, 8))
			pending, fits := pod("wants-b", "", gpu, 1), pod("wants-a", "", gpu, 1)
			pending.Spec.NodeSelector = map[string]string{"example.com/zone": "b"}
			fits.Spec.NodeSelector = map[string]string{"example.com/zone": "a"}
			return pending, fits, n
		}},
		{name: "exceeds every node", code: workload.ExceedsNode, says: "asks 16 nvidia.com/gpu, the node has 8", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("eight")
			env.AddNode(t, n, nil, devices(gpu, 8, 8))
			return pod("asks-16", "", gpu, 16), pod("asks-8", "", gpu, 8), n
		}},
		{name: "resource not offered", code: workload.ResourceNotOffered, says: "offered: nvidia.com/gpu.shared on 1 node(s) (time-slicing with renameByDefault renames it)", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("shared")
			env.AddNode(t, n, nil, devices("nvidia.com/gpu.shared", 32, 32))
			return pod("asks-gpu", "", gpu, 1), pod("asks-shared", "", "nvidia.com/gpu.shared", 1), n
		}},
		{name: "fragmented", code: workload.Fragmented, says: "5 free GPU(s) on the nodes that would take it, not 4 on any one", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			a, b := env.NodeName("a"), env.NodeName("b")
			env.AddNode(t, a, nil, devices(gpu, 8, 8))
			env.AddNode(t, b, nil, devices(gpu, 8, 8))
			create(t, env, env.Namespace, pod("holder-a", a, gpu, 5), pod("holder-b", b, gpu, 5))
			runs(t, env, "holder-a", a)
			runs(t, env, "holder-b", b)
			return pod("asks-4", "", gpu, 4), pod("asks-1", a, gpu, 1), a
		}},
		// cpu: a filter gpuops does not model; it says so, and quotes.
		{name: "the scheduler's own reason", code: workload.Scheduler, says: "Insufficient cpu", setup: func(t *testing.T, env *testcluster.Env) (*corev1.Pod, *corev1.Pod, string) {
			n := env.NodeName("cpus")
			env.AddNode(t, n, nil, devices(gpu, 8, 8))
			pending := pod("asks-64-cpus", "", gpu, 1)
			pending.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("64")
			return pending, pod("asks-1", "", gpu, 1), n
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testcluster.New(t)
			pending, fits, on := tc.setup(t, env)
			create(t, env, env.Namespace, pending, fits)
			said := env.Unscheduled(t, pending.Name)
			runs(t, env, fits.Name, on)

			a := why(t, env, pending.Name)
			if a.State != workload.Pending || a.Code != tc.code || !strings.Contains(a.Message+" "+a.Said, tc.says) || a.Said != said {
				t.Errorf("why %s: %s %s %q (said %q); want Pending %s with %q, said %q", pending.Name, a.State, a.Code, a.Message, a.Said, tc.code, tc.says, said)
			}
			if a := why(t, env, fits.Name); a.State != workload.Running || a.Code != "" || a.Node != on {
				t.Errorf("why %s: %+v, want Running on %s", fits.Name, a, on)
			}
		})
	}
}

// TestWhyOnUnusableNode: the black hole. The scheduler places a GPU pod on
// a node that advertises GPUs while health says it cannot run GPU work
// (its device plugin is asked and missing); why says on-unusable-node,
// carrying health's cause, and its text says it in one headline.
func TestWhyOnUnusableNode(t *testing.T) {
	env := testcluster.New(t)
	n := env.NodeName("hole")
	env.AddNode(t, n, map[string]string{operand.GPUPresent: "true", operand.Lab.DevicePlugin().LabelKey(): "true"}, devices(gpu, 8, 8))
	create(t, env, env.Namespace, pod("train", n, gpu, 8))
	runs(t, env, "train", n)
	a := why(t, env, "train")
	if a.State != workload.Stuck || a.Code != workload.OnUnusableNode || a.Health == nil || a.Health.Code != health.Missing {
		t.Errorf("why train: %+v, want Stuck on-unusable-node carrying %s", a, health.Missing)
	}
	r := gpuopstest.On(env).Want(t, 1, "why", "pod/train")
	if want := env.Namespace + "/train Stuck on-unusable-node bound to " + n + ", which cannot run GPU work: missing device-plugin"; !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("why pod/train:\n%s\nwant a headline starting %q", r.Stdout, want)
	}
}

// statusOf creates a pod asking a GPU, bound to a node no kubelet runs
// (its status is the test's to write), and writes its status as a
// kubelet would.
func statusOf(t *testing.T, env *testcluster.Env, name string, st corev1.PodStatus) {
	t.Helper()
	ctx := context.Background()
	p := pod(name, "", gpu, 1)
	p.Spec.NodeName = env.NodeName("gone")
	create(t, env, env.Namespace, p)
	pods := env.Client.CoreV1().Pods(env.Namespace)
	got, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status = st
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestWhyKubeletStatus: a pod whose status the kubelet wrote (bound to a
// node no kubelet runs: the status is the test's), as upstream writes it:
//   - refused at admission (kubernetes v1.37.2
//     pkg/kubelet/cm/devicemanager/manager.go, "Allocate failed due to
//     requested number of devices unavailable for %s. Requested: %d,
//     Available: %d, which is unexpected"; reason UnexpectedAdmissionError,
//     pkg/kubelet/lifecycle/predicate.go): admission-rejected;
//   - a container the runtime cannot start because the NVIDIA hook cannot
//     load the driver's library, as the kubelet quotes containerd
//     (NVIDIA/gpu-operator#625, #511): driver-not-ready;
//   - its admission deferred for want of a registered device plugin (reason
//     DeviceNotReady, kubernetes PR #139959: not in v1.37.2, whose kubelet
//     fails it at admission; its message is not released, so the test's is
//     its own, quoted as it is): device-not-ready.
func TestWhyKubeletStatus(t *testing.T) {
	refused := "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
	hook := "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: " +
		"error during container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n" +
		"nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file: no such file or directory: unknown"
	deferred := "admission deferred: nvidia.com/gpu"
	for _, tc := range []struct {
		name        string
		status      corev1.PodStatus
		state, code string
		said        string
	}{
		{"refused", corev1.PodStatus{Phase: corev1.PodFailed, Reason: snapshot.UnexpectedAdmissionError, Message: refused},
			workload.Refused, workload.AdmissionRejected, snapshot.UnexpectedAdmissionError + ": " + refused},
		{"hook", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "registry.example/cuda:1",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "RunContainerError", Message: hook}}}}},
			workload.Stuck, workload.DriverNotReady, "RunContainerError: " + hook},
		{"deferred", corev1.PodStatus{Phase: corev1.PodPending, Reason: snapshot.DeviceNotReady, Message: deferred},
			workload.Stuck, workload.DeviceNotReady, snapshot.DeviceNotReady + ": " + deferred},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testcluster.New(t)
			statusOf(t, env, tc.name, tc.status)
			if a := why(t, env, tc.name); a.State != tc.state || a.Code != tc.code || a.Said != tc.said {
				t.Errorf("why %s: %+v, want %s %s said %q", tc.name, a, tc.state, tc.code, tc.said)
			}
		})
	}
}

// TestWhyBadInputAndNoGPU: a pod or workload that does not exist, a
// malformed target or --stuck-after: one line, exit 2. A pod asking no
// GPU says so, exit 0.
func TestWhyBadInputAndNoGPU(t *testing.T) {
	env := testcluster.New(t)
	c := gpuopstest.On(env)
	c.WantError(t, `pod "nope" not found in namespace `+env.Namespace, "why", "nope")
	c.WantError(t, "no pod of job/nope in namespace "+env.Namespace, "why", "job/nope")
	c.WantError(t, "want POD, pod/NAME", "why", "daemonset/x")
	c.WantError(t, "invalid name", "why", "pod/Not_A_Name")
	c.WantError(t, "want one TARGET", "why")
	c.WantError(t, "--stuck-after", "why", "x", "--stuck-after", "-1s")
	web := pod("web", "", corev1.ResourceCPU.String(), 1)
	create(t, env, env.Namespace, web)
	if r := c.Want(t, 0, "why", "web"); r.Stdout != env.Namespace+"/web asks no GPU\n" {
		t.Errorf("why web: %q", r.Stdout)
	}
}

// TestWhyRuntimeNotConfigured: a pod the scheduler bound, whose sandbox
// the container runtime cannot make, as the kubelet records it (its Event
// "Failed to create pod sandbox: <the runtime's error>", kubernetes v1.37.2
// pkg/kubelet/kuberuntime/kuberuntime_manager.go; containerd's error as
// NVIDIA/gpu-operator#730 pastes it): runtime-not-configured, joined with
// the node's health. KWOK holds the pod Pending (its init container waits).
func TestWhyRuntimeNotConfigured(t *testing.T) {
	env := testcluster.New(t)
	n := env.NodeName("no-runtime")
	env.AddNode(t, n, nil, devices(gpu, 8, 8))
	p := pod("train", n, gpu, 1)
	p.Spec.InitContainers = []corev1.Container{{Name: "wait", Image: "registry.example/wait:1"}}
	tpl := corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta}
	testcluster.InitWaiting(&tpl, "wait")
	p.ObjectMeta = tpl.ObjectMeta
	create(t, env, env.Namespace, p)
	var bound corev1.Pod
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		for _, q := range pods {
			if q.Name == "train" && q.Spec.NodeName == n && q.Status.Phase == corev1.PodPending {
				bound = q
				return true
			}
		}
		return false
	})
	msg := `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured`
	env.Warning(t, &bound, n, snapshot.FailedCreatePodSandBox, msg, 7, time.Now())
	a := why(t, env, "train")
	if a.State != workload.Stuck || a.Code != workload.RuntimeNotConfigured || a.Said != snapshot.FailedCreatePodSandBox+": "+msg ||
		!strings.Contains(a.Message, `whose container runtime has no runtime "nvidia"`) {
		t.Errorf("why train: %+v", a)
	}
}

// TestWhyWorkload: a Deployment's, a Job's and a StatefulSet's pods are
// found through their owners (the Deployment's through its ReplicaSet),
// each answered; a workload with no pod asking GPUs says so.
func TestWhyWorkload(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()
	env.AddNode(t, env.NodeName("eight"), nil, devices(gpu, 8, 8))
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	template := func(app string, n int64) corev1.PodTemplateSpec {
		p := pod(app, "", gpu, n)
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)}, Spec: p.Spec}
	}
	one := int32(1)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "trainer"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels("trainer")}, Template: template("trainer", 16)}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "ranks"}, Spec: appsv1.StatefulSetSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels("ranks")}, Template: template("ranks", 16)}}
	jobTemplate := template("sweep", 16)
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "sweep"}, Spec: batchv1.JobSpec{Template: jobTemplate}}
	web := template("web", 1)
	web.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	plain := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: web}}
	apps := env.Client.AppsV1()
	for _, err := range []error{
		func() error {
			_, err := apps.Deployments(env.Namespace).Create(ctx, deploy, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := apps.StatefulSets(env.Namespace).Create(ctx, sts, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := env.Client.BatchV1().Jobs(env.Namespace).Create(ctx, job, metav1.CreateOptions{})
			return err
		}(),
		func() error {
			_, err := apps.Deployments(env.Namespace).Create(ctx, plain, metav1.CreateOptions{})
			return err
		}(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		pending, running := 0, 0
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
					pending++
				}
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return pending == 3 && running == 1
	})
	c := gpuopstest.On(env)
	for _, target := range []string{"deployment/trainer", "statefulset/ranks", "job/sweep"} {
		r := c.Want(t, 1, "why", target, "--stuck-after", "1ns", "-o", "json")
		var got workload.WhyReport
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got.Answers) != 1 || got.Answers[0].Code != workload.ExceedsNode {
			t.Errorf("why %s: %v %+v, want one pod, exceeds-node", target, err, got)
		}
	}
	r := c.Want(t, 0, "why", "deploy/web")
	if !strings.HasPrefix(r.Stdout, env.Namespace+"/web-") || !strings.HasSuffix(r.Stdout, " asks no GPU\n") {
		t.Errorf("why deploy/web: %q", r.Stdout)
	}
}

// TestWhyCUDADriverTooOld: a container the NVIDIA hook refuses because its
// image requires a newer CUDA than the node's driver supports, its state as
// the kubelet quotes the hook (NVIDIA/nvidia-container-toolkit#152), is
// cuda-driver-too-old, against GFD's label of the driver's CUDA version.
// The node is one no kubelet runs: the pod's status is the test's.
func TestWhyCUDADriverTooOld(t *testing.T) {
	env := testcluster.New(t)
	env.AddNode(t, env.NodeName("gone"), map[string]string{"nvidia.com/cuda.driver-version.major": "12", "nvidia.com/cuda.driver-version.minor": "4"},
		devices(gpu, 8, 8), testcluster.NotReady())
	msg := "failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: " +
		"error during container init: error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n" +
		"nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda container: unknown"
	statusOf(t, env, "train", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "registry.example/cuda:1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128, Message: msg}}}}})
	a := why(t, env, "train")
	if a.State != workload.Stuck || a.Code != workload.CUDADriverTooOld || !strings.Contains(a.Message, "requires CUDA >= 12.8, its driver supports CUDA 12.4 (GFD's labels)") {
		t.Errorf("why train: %+v", a)
	}
}
