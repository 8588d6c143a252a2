// Package dra_test judges the DRA stack of a GPUCluster on a real control
// plane: KWOK nodes labelled as the operator's labeller labels them there
// (driver, dra-driver, dra-validator, dcgm-dra, dcgm-exporter-dra), the
// stack's DaemonSets, and the ResourceSlices the DRA kubelet plugin would
// publish (resource.k8s.io/v1, driver gpu.nvidia.com, one pool per node).
// The DRA validator's pods claim a GPU through the device class gpu.nvidia.com
// as upstream's do, so the scheduler itself leaves them Pending where no
// GPU can be allocated. gpuops health is run as a user runs it, and
// gpuops why on pods whose claims wait (TestWhyDRANodeByNode).
package dra_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// draStack is what the operator's labeller asks for on a GPU node of a
// GPUCluster (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go
// gpuClusterStateLabels).
var draStack = []string{operand.Driver, operand.DRADriver, operand.DRAValidator, "dcgm-dra", "dcgm-exporter-dra"}

// fleetKey sorts the test's nodes into the healthy fleet and the broken.
const fleetKey = "dra.gpuops.test/fleet"

// node is one case: its deploy labels, the slices published for it and
// what gpuops says of it.
type node struct {
	name   string
	labels map[string]string // nil: the DRA stack's
	slices []rehearsal.Slice
	code   string // "": READY
	// message is a part of the cause's message, evidence of its evidence
	message, evidence string
	blocked           []string
	// unbound: no GPU can be allocated there, so the scheduler leaves the
	// DRA validator's pod Pending
	unbound bool
}

// The kubelet plugin's health monitor's taints
// (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/device_health.go).
var (
	nonFatalXID = resourcev1.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "13", Effect: resourcev1.DeviceTaintEffectNone}
	unmonitored = resourcev1.DeviceTaint{Key: "gpu.nvidia.com/unmonitored", Effect: resourcev1.DeviceTaintEffectNone}
)

var nodes = []node{
	{name: "gpus", slices: []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8)}}},
	{name: "two-slices", slices: []rehearsal.Slice{{Generation: 1, Count: 2, Devices: rehearsal.Devices("gpu", "gpu", 4)}, {Generation: 1, Count: 2, Devices: rehearsal.Devices("gpu-b", "gpu", 4)}}},
	{name: "vfio-only", unbound: true, slices: []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("vfio", "vfio", 4)}}},
	{name: "informational-taints", slices: []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8, nonFatalXID, unmonitored)}}},
	{name: "sandbox", labels: map[string]string{operand.WorkloadConfigLabel: operand.VMPassthrough, operand.LabelPrefix + "vfio-manager": "true"}},
	{name: "no-slice", unbound: true, code: health.DevicesNotPublished, blocked: []string{operand.DRAValidator},
		message: "publishes no ResourceSlice of driver gpu.nvidia.com", evidence: "no ResourceSlice of driver gpu.nvidia.com with spec.nodeName"},
	{name: "empty-slice", unbound: true, slices: []rehearsal.Slice{{Generation: 1, Count: 1, Devices: nil}}, code: health.DevicesNotPublished, blocked: []string{operand.DRAValidator},
		message: "list no device", evidence: "1 of 1 ResourceSlices, 0 devices"},
	// The newer generation, incomplete, is published first: published
	// after the older one, it left a moment when the node's pool was
	// complete, and the scheduler bound the DRA validator's pod there (a
	// CI run; every time with 3 s between the two creates).
	{name: "incomplete", unbound: true, slices: []rehearsal.Slice{{Generation: 2, Count: 2, Devices: rehearsal.Devices("gpu", "gpu", 4)}, {Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8)}},
		code: health.PoolIncomplete, blocked: []string{operand.DRAValidator},
		message: "(generation 2) has 1 of its 2 ResourceSlices", evidence: "generation 2: 1 of 2 ResourceSlices, 4 devices"},
	{name: "tainted", slices: []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8, rehearsal.FatalXID, rehearsal.FatalXID)}}, code: health.DevicesTainted, blocked: []string{},
		message: "2 of 8 devices tainted against new claims: gpu-0 gpu.nvidia.com/xid=79:NoSchedule, gpu-1 gpu.nvidia.com/xid=79:NoSchedule"},
}

// TestDRAHealth builds the fleet and judges it: exit 0 on the healthy nodes
// of every kind, 1 with each broken one, named with its cause in every
// output. Not parallel: the nodes carry the operator's deploy labels.
func TestDRAHealth(t *testing.T) {
	env := testcluster.New(t)
	stack(t, env)
	env.AddNode(t, env.NodeName("cpu"), nil)
	for _, n := range nodes {
		labels := map[string]string{operand.GPUPresent: "true", fleetKey: "healthy"}
		if n.code != "" {
			labels[fleetKey] = "broken"
		}
		if n.labels == nil {
			for _, o := range draStack {
				labels[operand.LabelPrefix+o] = "true"
			}
		}
		for k, v := range n.labels {
			labels[k] = v
		}
		gpuopstest.Publish(t, env, env.AddNode(t, env.NodeName(n.name), labels), n.slices)
	}
	settle(t, env)

	c := gpuopstest.On(env)
	args := func(sel string, more ...string) []string {
		return append([]string{"health", "--discover", "-l", testcluster.LabelTestID + "=" + env.ID + sel}, more...)
	}
	t.Run("healthy fleet", func(t *testing.T) {
		r := c.Want(t, 0, args(","+fleetKey+"=healthy")...)
		for _, n := range nodes {
			if line := env.NodeName(n.name) + " READY\n"; n.code == "" && !strings.Contains(r.Stdout, line) {
				t.Errorf("no line %q in\n%s", line, r.Stdout)
			}
		}
		for _, v := range healthJSON(t, c, 0, args(","+fleetKey+"=healthy", "-o", "json")...) {
			if !v.Judged || !v.Usable || v.Cause != nil {
				t.Errorf("%s: %+v cause %+v, want usable", v.Node, v, v.Cause)
			}
		}
	})
	t.Run("whole fleet", func(t *testing.T) {
		r := c.Want(t, 1, args("")...)
		if strings.Contains(r.Stdout, env.NodeName("cpu")) {
			t.Errorf("the node without a GPU is listed:\n%s", r.Stdout)
		}
		// A GPUCluster install asks for no device plugin, toolkit or validator.
		for _, o := range []string{operand.DevicePlugin, operand.ContainerToolkit, operand.OperatorValidator} {
			if strings.Contains(r.Stdout, health.Missing+" "+o) {
				t.Errorf("%s reported missing:\n%s", o, r.Stdout)
			}
		}
	})
	// Every judge, in text and JSON, prints from a bundle (gpuops collect)
	// what it prints live.
	t.Run("from is live", func(t *testing.T) {
		sel := testcluster.LabelTestID + "=" + env.ID
		c.FromIsLive(t, append(gpuopstest.TextAndJSON(gpuopstest.FromCases(env.NodeName("incomplete"), sel)),
			gpuopstest.Golden{Args: args("")}, gpuopstest.Golden{Args: args("", "-o", "json")}, gpuopstest.Golden{Args: args("", "--explain")}))
	})
	for _, n := range nodes {
		if n.code == "" {
			continue
		}
		t.Run(n.name, func(t *testing.T) {
			name := env.NodeName(n.name)
			line := name + " UNUSABLE " + n.code + " " + operand.DRADriver
			if len(n.blocked) > 0 {
				line += " blocks " + strings.Join(n.blocked, ",")
			}
			if r := c.Want(t, 1, args("", name)...); r.Stdout != line+"\n" {
				t.Errorf("text %q, want the one line %q", r.Stdout, line)
			}
			r := c.Want(t, 1, args("", name, "--explain")...)
			if !strings.Contains(r.Stdout, line+"\n  ") || !strings.Contains(r.Stdout, n.message) || !strings.Contains(r.Stdout, n.evidence) {
				t.Errorf("--explain: want %q, %q and %q in\n%s", line, n.message, n.evidence, r.Stdout)
			}
			got := healthJSON(t, c, 1, args("", name, "-o", "json")...)
			if len(got) != 1 || got[0].Cause == nil || got[0].Cause.Code != n.code || got[0].Cause.Operand != operand.DRADriver ||
				!strings.Contains(got[0].Cause.Message, n.message) || strings.Join(got[0].Blocked, ",") != strings.Join(n.blocked, ",") || len(got[0].Also) != 0 {
				t.Errorf("-o json: %+v, want %s/%s with %q blocking %q", got, n.code, operand.DRADriver, n.message, n.blocked)
			}
			for _, format := range []string{"yaml", "table", "junit"} {
				if r := c.Want(t, 1, args("", name, "-o", format)...); !strings.Contains(r.Stdout, name) || !strings.Contains(r.Stdout, n.code) {
					t.Errorf("-o %s names not %s and %s:\n%s", format, name, n.code, r.Stdout)
				}
			}
		})
	}
}

// TestDRAServe follows the devices as serve does, in process: its first
// verdict of every node is the one-shot one, and a slice taken away, put
// back with a fatal XID on a device, and healed, each reach the node's
// verdict through the watch.
func TestDRAServe(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()
	stack(t, env)
	gpus, bare := env.NodeName("gpus"), env.NodeName("bare")
	var gpusNode *corev1.Node
	for _, n := range []string{gpus, bare} {
		labels := map[string]string{operand.GPUPresent: "true"}
		for _, o := range draStack {
			labels[operand.LabelPrefix+o] = "true"
		}
		if node := env.AddNode(t, n, labels); n == gpus {
			gpusNode = node
		}
	}
	gpuopstest.Publish(t, env, gpusNode, []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8)}})
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running := 0
		for i := range pods {
			if p := snapshot.PodFrom(&pods[i]); p.Present() && p.Health.Ready {
				running++
			}
		}
		// bare's DRA validator stays Pending: it publishes no GPU.
		return len(pods) == 2*len(draStack) && running == 2*len(draStack)-1
	})

	opts := pipeline.Options{Namespace: env.Namespace, NodeSelector: testcluster.LabelTestID + "=" + env.ID, Health: true, Roster: pipeline.DiscoverRoster}
	f := gpuopstest.Follow(t, env.Client, live.Options{Options: opts})
	r, err := pipeline.Run(ctx, env.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Nodes {
		want := ""
		if v.Health.Cause != nil {
			want = v.Health.Cause.Code
		}
		if f.Causes[v.Node] != want {
			t.Errorf("first live verdict of %s: %q, one-shot %q", v.Node, f.Causes[v.Node], want)
		}
	}
	if f.Causes[gpus] != "" || f.Causes[bare] != health.DevicesNotPublished {
		t.Fatalf("first verdicts %v, want %s usable and %s %s", f.Causes, gpus, bare, health.DevicesNotPublished)
	}
	published := rehearsal.ResourceSlice(gpusNode, 0, rehearsal.Slice{}).Name
	if err := env.Client.ResourceV1().ResourceSlices().Delete(ctx, published, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.WaitFor(t, gpus, health.DevicesNotPublished)
	gpuopstest.Publish(t, env, gpusNode, []rehearsal.Slice{{Generation: 2, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8, rehearsal.FatalXID)}})
	f.WaitFor(t, gpus, health.DevicesTainted)
	got, err := env.Client.ResourceV1().ResourceSlices().Get(ctx, published, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Devices[0].Taints = nil
	if _, err := env.Client.ResourceV1().ResourceSlices().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.WaitFor(t, gpus, "")
}

// stack creates the DRA stack's DaemonSets (and the sandbox's vfio
// manager), the validator's pods claiming a GPU of the test's class.
func stack(t *testing.T, env *testcluster.Env) {
	class := gpuopstest.DeviceClass(t, env)
	for _, name := range append(slices.Clone(draStack), "vfio-manager") {
		o, err := operand.Lookup(operand.Real, name)
		if err != nil {
			t.Fatal(err)
		}
		ds := testcluster.DaemonSet(env.Namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true", testcluster.LabelTestID: env.ID}, "16Mi")
		if name == operand.DRAValidator {
			claimGPU(t, env, &ds.Spec.Template.Spec, class)
		}
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func healthJSON(t *testing.T, c gpuopstest.Cluster, code int, args ...string) []health.Node {
	t.Helper()
	r := c.Want(t, code, args...)
	var got struct{ Nodes []health.Node }
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, r.Stdout)
	}
	return got.Nodes
}

// claimGPU makes the pods claim one GPU of the class, as the DRA validator's
// do (manifests/state-dra-validation/0400_resourceclaimtemplate.yaml,
// 0500_daemonset.yaml: claim validation-gpu, init container gpu-validation).
func claimGPU(t *testing.T, env *testcluster.Env, spec *corev1.PodSpec, class string) {
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "nvidia-dra-validator-gpu", Namespace: env.Namespace},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "validation-gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}}
	if _, err := env.Client.ResourceV1().ResourceClaimTemplates(env.Namespace).Create(context.Background(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "validation-gpu", ResourceClaimTemplateName: &tmpl.Name}}
	claims := []corev1.ResourceClaim{{Name: "validation-gpu"}}
	spec.InitContainers = []corev1.Container{{Name: "gpu-validation", Image: "registry.example/fake:1", Resources: corev1.ResourceRequirements{Claims: claims}}}
	spec.Containers[0].Resources.Claims = claims
}

// settle waits until every pod is where the scheduler leaves it: each
// DaemonSet's pod on each node that asks for it, Running, but the DRA
// validator's on the nodes where no GPU can be allocated, Pending there.
func settle(t *testing.T, env *testcluster.Env) {
	want := 0
	for _, n := range nodes {
		if n.labels == nil {
			want += len(draStack)
		} else {
			want++ // the sandbox node's vfio-manager
		}
	}
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		if len(pods) != want {
			return false
		}
		for i := range pods {
			p := snapshot.PodFrom(&pods[i])
			unbound := p.DaemonSet == "nvidia-dra-validator" && slices.ContainsFunc(nodes, func(n node) bool {
				return n.unbound && env.NodeName(n.name) == p.Target
			})
			if unbound {
				if p.Node != "" || p.Reason == "" {
					return false
				}
			} else if !p.Present() || !p.Health.Ready {
				return false
			}
		}
		return true
	})
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
	class := "t-" + env.ID + "." + snapshot.DRADriverName // stack's (gpuopstest.DeviceClass)
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
		gpuopstest.Publish(t, env, env.AddNode(t, env.NodeName(name), labels), slices)
	}
	full := env.NodeName("full")
	validator, plugin := daemonSet(t, operand.DRAValidator), daemonSet(t, operand.DRADriver)
	gpuopstest.ClaimPod(t, env, "holder", class, 3, "", full)
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
	train := gpuopstest.ClaimPod(t, env, "train", class, 2, "", "")
	said := env.Unscheduled(t, train.Name)
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
	gpuopstest.Publish(t, env, env.AddNode(t, free, labels), []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 8)}})
	// train runs there, and so must the DRA validator: free is usable only
	// then, and the scheduler may bind either first.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		on := 0
		for i := range pods {
			if (pods[i].Name == train.Name || pods[i].Labels["app"] == validator) && testcluster.PodRunningOn(&pods[i], free) {
				on++
			}
		}
		return on == 2
	})
	if a := whyJSON(t, env, "train", 0); a.State != workload.Running || a.Code != "" || a.Node != free {
		t.Errorf("why train: %+v, want Running on %s", a, free)
	}

	t.Run("device class unknown", func(t *testing.T) {
		missing := "t-" + env.ID + ".nope.example.com"
		gpuopstest.ClaimPod(t, env, "lost", missing, 1, "", "")
		said := env.Unscheduled(t, "lost")
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
		p := gpuopstest.ClaimPod(t, env, "prep", class, 1, gone, "")
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
