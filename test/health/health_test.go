// Package health_test judges node health on a real control plane: operand
// pods held by KWOK in the states a GPU node goes through (hack/kwokctl.yaml's
// gpuops.test/pod-state stages), nodes with the device counts a device
// plugin reports, read by the reader and judged by pkg/health.
package health_test

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// States a test DaemonSet's pods are held in: ready is KWOK's default, the
// others are the test stages; init-waiting.<name> waits in that init
// container.
const (
	ready       = "ready"
	crashLoop   = "crash-loop"
	notReady    = "running-not-ready"
	initPrefix  = "init-waiting."
	selectorKey = "health.gpuops.test/" // + operand name; value: the state
)

func inInit(container string) string { return initPrefix + container }

// stack is what the labeller asks for on a container GPU node (DCGM left
// out, to keep the DaemonSets few).
var stack = []string{operand.Driver, operand.ContainerToolkit, operand.OperatorValidator,
	operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter}

// daemonSet runs an operand's pods in one state on the nodes labelled
// selectorKey+operand=state.ID: the operand's own DaemonSet for ready pods,
// a variant <DaemonSet>-<state> for the others (the roster lists it). Its
// pods run the operand's init containers as upstream names them
// (operand.Inits), which the init-waiting stage steps through.
func daemonSet(ns, id string, o operand.Operand, state string) *appsv1.DaemonSet {
	name := variant(o, state)
	// It selects the operand's deploy label too, as the operator's do, so
	// that --discover finds it as a DaemonSet of the operand.
	ds := testcluster.DaemonSet(ns, name, map[string]string{selectorKey + o.Name: state + "." + id, operand.LabelPrefix + o.Name: "true"}, "16Mi")
	spec := &ds.Spec.Template.Spec
	for _, i := range operand.Newest().InitsOf(o.Name) {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: i.Container, Image: "registry.example/fake:1"})
	}
	switch {
	case state == crashLoop, state == notReady:
		ds.Spec.Template.Annotations = map[string]string{testcluster.PodState: state}
	case strings.HasPrefix(state, initPrefix):
		testcluster.InitWaiting(&ds.Spec.Template, strings.TrimPrefix(state, initPrefix))
	}
	return ds
}

// variant names an operand's DaemonSet of a state: short, as the pods' app
// label (its name) must fit in 63 characters.
func variant(o operand.Operand, state string) string {
	switch {
	case state == ready:
		return o.DaemonSet
	case state == crashLoop:
		return o.DaemonSet + "-crash"
	case state == notReady:
		return o.DaemonSet + "-notready"
	}
	return o.DaemonSet + "-i-" + strings.TrimPrefix(state, initPrefix)
}

// scenario is one node: its deploy labels beyond the stack's, the state of
// each operand's pod on it (none: no pod), its GPUs, and the verdict.
type scenario struct {
	name     string
	labels   map[string]string // "" removes a stack label
	pods     map[string]string // operand → state
	gpus     *[2]int64         // capacity, allocatable of nvidia.com/gpu; nil: none
	resource string            // the resource gpus counts instead (the device plugin's rename)
	cpu      bool              // no GPU and no deploy label at all
	code     string            // "": usable
	operand  string
	blocked  []string
	stuckNow string // the code when judged two hours later
	kubelet         // what the kubelet reports besides (kubelet_test.go)
}

func allReady(except map[string]string) map[string]string {
	out := map[string]string{}
	for _, o := range stack {
		out[o] = ready
	}
	for o, s := range except {
		if s == "" {
			delete(out, o)
		} else {
			out[o] = s
		}
	}
	return out
}

// The init containers the scenarios rely on (upstream, see operand.Inits):
// the toolkit's and the validator's driver-validation wait for the driver,
// the validator's toolkit-validation for the toolkit, and the device
// plugin's, GFD's and the DCGM exporter's toolkit-validation for the file
// the validator's toolkit-validation writes; its plugin-validation waits for
// the device plugin to advertise GPUs.
var scenarios = []scenario{
	{name: "driver-crash", gpus: &[2]int64{8, 8}, pods: map[string]string{
		operand.Driver: crashLoop, operand.ContainerToolkit: inInit("driver-validation"),
		operand.OperatorValidator: inInit("driver-validation"), operand.DevicePlugin: inInit("toolkit-validation"),
		operand.GPUFeatureDiscovery: inInit("toolkit-validation"), operand.DCGMExporter: inInit("toolkit-validation"),
	}, code: health.CrashLoop, operand: operand.Driver, blocked: []string{operand.ContainerToolkit, operand.DevicePlugin,
		operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.OperatorValidator}},
	{name: "toolkit-not-ready", gpus: &[2]int64{8, 8}, pods: map[string]string{
		operand.Driver: ready, operand.ContainerToolkit: notReady, operand.OperatorValidator: inInit("toolkit-validation"),
		operand.DevicePlugin: inInit("toolkit-validation"), operand.GPUFeatureDiscovery: inInit("toolkit-validation"),
		operand.DCGMExporter: inInit("toolkit-validation"),
	}, code: health.NotReady, operand: operand.ContainerToolkit, blocked: []string{operand.DevicePlugin,
		operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.OperatorValidator}},
	{name: "nvml-failure", gpus: &[2]int64{0, 0}, pods: allReady(map[string]string{operand.OperatorValidator: inInit("plugin-validation")}),
		code: health.GPUsNotAdvertised, operand: operand.DevicePlugin, blocked: []string{operand.OperatorValidator}},
	{name: "one-bad-gpu", gpus: &[2]int64{8, 7}, pods: allReady(nil),
		code: health.GPUsUnhealthy, operand: operand.DevicePlugin, blocked: []string{}},
	{name: "mig-change", gpus: &[2]int64{8, 8}, labels: map[string]string{
		operand.LabelPrefix + operand.DevicePlugin:        operand.MIGChange.Value,
		operand.LabelPrefix + operand.GPUFeatureDiscovery: operand.MIGChange.Value,
		operand.LabelPrefix + operand.DCGMExporter:        operand.MIGChange.Value,
	}, pods: allReady(map[string]string{operand.DevicePlugin: "", operand.GPUFeatureDiscovery: "", operand.DCGMExporter: ""}),
		code: health.Paused, operand: operand.DevicePlugin, blocked: []string{operand.GPUFeatureDiscovery, operand.DCGMExporter},
		stuckNow: health.Stuck},
	{name: "healthy", gpus: &[2]int64{8, 8}, pods: allReady(nil)},
	// Time-slicing with renameByDefault: 8 GPUs, 4 replicas each, advertised
	// as nvidia.com/gpu.shared alone.
	{name: "shared-renamed", gpus: &[2]int64{32, 32}, resource: "nvidia.com/gpu.shared", pods: allReady(nil)},
	{name: "host-driver", gpus: &[2]int64{8, 8}, labels: map[string]string{operand.LabelPrefix + operand.Driver: "pre-installed"},
		pods: allReady(map[string]string{operand.Driver: ""})},
	{name: "cpu", cpu: true},
	// The validator's workload pod refused a GPU: the pods on the node hold
	// all 8 (NVIDIA/gpu-operator#233, #481), a note on a usable node; so
	// with one freed since a refusal just now (the validator takes it at its
	// next try); with one free past the validator's retry (health.RetryWithin)
	// the refusal is the node's.
	{name: "full", gpus: &[2]int64{8, 8}, pods: allReady(map[string]string{operand.OperatorValidator: inInit("plugin-validation")}),
		kubelet: kubelet{refused: true, held: 8, note: health.GPUsAllInUse}},
	{name: "freed-lately", gpus: &[2]int64{8, 8}, pods: allReady(map[string]string{operand.OperatorValidator: inInit("plugin-validation")}),
		kubelet: kubelet{refused: true, held: 7, note: health.GPUsAllInUse}},
	{name: "refused-gpu-free", gpus: &[2]int64{8, 8}, pods: allReady(map[string]string{operand.OperatorValidator: inInit("plugin-validation")}),
		kubelet: kubelet{refused: true, refusedAt: time.Hour, held: 7}, code: health.InitWaiting, operand: operand.OperatorValidator, blocked: []string{}},
	// The toolkit's pod runs, containerd has no "nvidia" runtime: the pods
	// of that RuntimeClass get no sandbox (#432, #549, #730).
	{name: "no-runtime", gpus: &[2]int64{8, 8}, pods: map[string]string{
		operand.Driver: ready, operand.ContainerToolkit: ready, operand.OperatorValidator: inInit("driver-validation"),
		operand.DevicePlugin: inInit("toolkit-validation"), operand.GPUFeatureDiscovery: inInit("toolkit-validation"),
		operand.DCGMExporter: inInit("toolkit-validation"),
	}, kubelet: kubelet{noRuntime: []string{operand.OperatorValidator, operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter}},
		code: health.RuntimeNotConfigured, operand: operand.ContainerToolkit, blocked: []string{operand.DevicePlugin,
			operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.OperatorValidator}},
}

// TestHealthOnKWOK builds a node per scenario, reads the cluster and judges
// it. Not parallel: the nodes carry the operator's deploy labels.
func TestHealthOnKWOK(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()

	// The DaemonSets every scenario needs, and the roster that counts the
	// variants as their operands.
	roster := slices.Clone(operand.Real)
	need := map[string]map[string]bool{} // operand → states
	stateOf := map[string]string{}       // DaemonSet → state
	for _, sc := range scenarios {
		for o, state := range sc.pods {
			if need[o] == nil {
				need[o] = map[string]bool{}
			}
			need[o][state] = true
		}
	}
	for i, o := range roster {
		for state := range need[o.Name] {
			stateOf[variant(o, state)] = state
			if state != ready {
				roster[i].Variants = append(roster[i].Variants, variant(o, state))
			}
			if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, daemonSet(env.Namespace, env.ID, o, state), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	wantPods := 0
	for _, sc := range scenarios {
		labels := map[string]string{}
		if !sc.cpu {
			labels[operand.GPUPresent], labels[operand.GPUCountLabel] = "true", "8"
			for _, o := range stack {
				labels[operand.LabelPrefix+o] = "true"
			}
		}
		for k, v := range sc.labels {
			if v == "" {
				delete(labels, k)
			} else {
				labels[k] = v
			}
		}
		for o, state := range sc.pods {
			labels[selectorKey+o] = state + "." + env.ID
			wantPods++
		}
		var opts []testcluster.NodeOption
		if sc.gpus != nil {
			opts = append(opts, withGPUs(cmp.Or(sc.resource, snapshot.GPUResource), sc.gpus[0], sc.gpus[1]))
		}
		env.AddNode(t, env.NodeName(sc.name), labels, opts...)
	}

	// Settled: every pod in the state its DaemonSet asks for, as the
	// snapshot reads it.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		if len(pods) != wantPods {
			return false
		}
		for i := range pods {
			if p := snapshot.PodFrom(&pods[i]); !inState(p, stateOf[p.DaemonSet]) {
				return false
			}
		}
		return true
	})

	for _, sc := range scenarios {
		sc.kubelet.report(t, env, env.NodeName(sc.name), sc.pods)
	}

	cf := kube.NewFlags()
	cf.KubeConfig = &env.Kubeconfig
	clients, err := kube.Connect(cf)
	if err != nil {
		t.Fatal(err)
	}
	opts := read.Options{NodeSelector: testcluster.LabelTestID + "=" + env.ID, Trace: operand.Paused, Kubelet: true}
	s, err := read.Snapshot(ctx, clients.Kube, env.Namespace, opts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	got := health.Assess(s, roster, now, time.Hour)
	later := health.Assess(s, roster, now.Add(2*time.Hour), time.Hour)
	// The stages hold their states: nothing (KWOK's own pod-ready-again, a
	// stage applied again) moved a pod on meanwhile.
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if p := snapshot.PodFrom(&pods.Items[i]); p.DaemonSet != "" && !inState(p, stateOf[p.DaemonSet]) {
			t.Errorf("pod %s left state %s: %+v", p.Name, stateOf[p.DaemonSet], p.Health)
		}
	}
	if len(got) != len(scenarios) {
		t.Fatalf("%d verdicts, want %d", len(got), len(scenarios))
	}
	for i, v := range got {
		sc := scenarioOf(env, v.Node)
		t.Run(sc.name, func(t *testing.T) {
			check(t, v, sc, sc.code)
			if sc.stuckNow != "" {
				check(t, later[i], sc, sc.stuckNow)
			}
			// The live tracker reads one node at a time: the same verdict.
			one := opts
			one.Node = v.Node
			single, err := read.Snapshot(ctx, clients.Kube, env.Namespace, one)
			if err != nil {
				t.Fatal(err)
			}
			if alone := health.Assess(single, roster, now, time.Hour); !reflect.DeepEqual(alone, []health.Node{v}) {
				t.Errorf("assessed alone: %+v\nin the fleet: %+v", alone, v)
			}
		})
	}
	t.Run("commands", func(t *testing.T) { checkCommands(t, env, got) })
}

func check(t *testing.T, v health.Node, sc scenario, code string) {
	t.Helper()
	if notes := noteCodes(v); notes != sc.note {
		t.Errorf("notes %q (%+v), want %q", notes, v.Notes, sc.note)
	}
	if code == "" {
		if !v.Usable || v.Cause != nil || v.Judged == sc.cpu {
			t.Errorf("want usable (judged %v), got %+v cause %+v evidence %q", !sc.cpu, v, v.Cause, v.Evidence)
		}
		return
	}
	if v.Usable || v.Cause == nil || v.Cause.Code != code || v.Cause.Operand != sc.operand || !reflect.DeepEqual(v.Blocked, sc.blocked) {
		t.Errorf("got cause %+v blocked %q (evidence %q), want %s/%s blocking %q", v.Cause, v.Blocked, v.Evidence, code, sc.operand, sc.blocked)
	}
}

func scenarioOf(env *testcluster.Env, node string) scenario {
	for _, sc := range scenarios {
		if env.NodeName(sc.name) == node {
			return sc
		}
	}
	panic("no scenario for node " + node)
}

// inState reports whether a pod shows the state its DaemonSet asks for.
func inState(p snapshot.Pod, state string) bool {
	h := p.Health
	switch {
	case state == crashLoop:
		return h.State == "CrashLoopBackOff" && h.Restarts > 0 && h.LastState == "Error" && p.Present() && !h.Ready
	case state == notReady:
		return p.Present() && !h.Ready && h.Init == "" && h.Container == ""
	case strings.HasPrefix(state, initPrefix):
		return h.Init == strings.TrimPrefix(state, initPrefix) && !h.InitSince.IsZero() && p.Phase == corev1.PodPending
	}
	return state == ready && p.Present() && h.Ready
}

// withGPUs gives a node capacity and allocatable of a device resource, as a
// device plugin reports them (unhealthy devices are not allocatable). KWOK
// keeps a node's capacity and allocatable as created.
func withGPUs(name string, capacity, allocatable int64) testcluster.NodeOption {
	return func(n *corev1.Node) {
		n.Status.Capacity[corev1.ResourceName(name)] = *resource.NewQuantity(capacity, resource.DecimalSI)
		n.Status.Allocatable[corev1.ResourceName(name)] = *resource.NewQuantity(allocatable, resource.DecimalSI)
	}
}
