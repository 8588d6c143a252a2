// Package sharing_test judges, on the real control plane, nodes that offer
// their GPUs shared (time-slicing, MPS) or partitioned (MIG) as the device
// plugin, GFD and the MIG manager would label them and set their
// allocatable, against the ConfigMaps a ClusterPolicy names: every healthy
// kind usable (exit 0), each broken one unusable with its cause named in
// every output format (exit 1). The ClusterPolicy is cluster-wide: the
// tests do not run in parallel.
package sharing_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/rehearsal/configs"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// The label that tells the cases apart (its value is the case's name).
const (
	caseLabel  = "sharing.gpuops.test/case"
	stuckAfter = 2 * time.Second
)

// stack is what each node asks for and runs, ready: the chain up to the
// device plugin, GFD and the MIG manager.
var stack = []string{operand.Driver, operand.ContainerToolkit, operand.OperatorValidator, operand.DevicePlugin,
	operand.GPUFeatureDiscovery, operand.MIGManager}

// nodeCase is one node: the labels the device plugin's config, GFD and the
// MIG manager leave on it beyond the stack's, what it advertises, and the
// cause it must be unusable for ("": usable).
type nodeCase struct {
	name    string
	labels  map[string]string
	devices map[string]int64
	code    string
	operand string
}

func sharingLabel(key string) map[string]string {
	return map[string]string{operand.DevicePluginConfigLabel: key}
}

func migLabels(layout, state, strategy string) map[string]string {
	return map[string]string{operand.MIGConfigLabel: layout, operand.MIGChange.StateLabel: state, operand.MIGStrategyLabel: strategy}
}

func with(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var cases = []nodeCase{
	{name: "plain", devices: map[string]int64{snapshot.GPUResource: 8}},
	{name: "ts-renamed", labels: sharingLabel("ts-renamed"), devices: map[string]int64{"nvidia.com/gpu.shared": 32}},
	{name: "ts", labels: sharingLabel("ts"), devices: map[string]int64{snapshot.GPUResource: 32}},
	{name: "mps", labels: with(sharingLabel("mps"), map[string]string{operand.MPSCapableLabel: "true"}),
		devices: map[string]int64{snapshot.GPUResource: 32}},
	{name: "mig-mixed", labels: migLabels("all-1g.10gb", operand.MIGSuccess, "mixed"), devices: map[string]int64{"nvidia.com/mig-1g.10gb": 56}},
	{name: "mig-single", labels: with(migLabels("all-1g.10gb", operand.MIGSuccess, "single"),
		map[string]string{operand.GPUCountLabel: "56", operand.GPUProductLabel: "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"}),
		devices: map[string]int64{snapshot.GPUResource: 56}},

	{name: "ts-not-applied", labels: sharingLabel("ts"), devices: map[string]int64{snapshot.GPUResource: 8},
		code: health.SharingNotApplied, operand: operand.DevicePlugin},
	{name: "config-unknown", labels: sharingLabel("a100-shared"), devices: map[string]int64{snapshot.GPUResource: 8},
		code: health.SharingConfigUnknown, operand: operand.DevicePlugin},
	// GFD labels mps.capable=false: the MPS control daemon does not run.
	{name: "mps-no-daemon", labels: with(sharingLabel("mps"), map[string]string{operand.MPSCapableLabel: "false"}),
		devices: map[string]int64{snapshot.GPUResource: 32}, code: health.MPSDaemonNotReady, operand: operand.DevicePlugin},
	{name: "mig-failed", labels: migLabels("all-1g.10gb", operand.MIGFailed, "mixed"), devices: map[string]int64{snapshot.GPUResource: 8},
		code: health.MIGFailed, operand: operand.MIGManager},
	{name: "mig-unknown", labels: migLabels("all-3g.40gb", operand.MIGFailed, "mixed"), devices: map[string]int64{snapshot.GPUResource: 8},
		code: health.MIGConfigUnknown, operand: operand.MIGManager},
	{name: "mig-mismatch", labels: migLabels("all-1g.10gb", operand.MIGSuccess, "mixed"), devices: map[string]int64{"nvidia.com/mig-1g.10gb": 28},
		code: health.MIGLayoutMismatch, operand: operand.MIGManager},
	// An aborted change (mig-parted #485): pending, the GPU clients paused.
	{name: "mig-stuck", labels: with(migLabels("all-1g.10gb", operand.MIGPending, "mixed"), map[string]string{
		operand.LabelPrefix + operand.DevicePlugin:        operand.MIGChange.Value,
		operand.LabelPrefix + operand.GPUFeatureDiscovery: operand.MIGChange.Value,
	}), code: health.MIGStuck, operand: operand.MIGManager},
}

// TestSharingAndMIG sets the cluster up as the operator, the device plugin
// and the MIG manager would leave it and judges it with gpuops health.
func TestSharingAndMIG(t *testing.T) {
	env := testcluster.New(t)
	ctx := context.Background()
	createPolicy(t, env)
	for _, cm := range []*corev1.ConfigMap{rehearsal.SharingConfigs(env.Namespace), rehearsal.MIGConfigs(env.Namespace)} {
		if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ops := make([]operand.Operand, len(stack))
	for i, name := range stack {
		o, err := operand.Lookup(operand.Real, name)
		if err != nil {
			t.Fatal(err)
		}
		ops[i] = o
	}
	// The operands' DaemonSets, and the MPS control daemon where the
	// operator runs it (k8s-device-plugin's daemonset-mps-control-daemon.yml).
	dss := map[string]map[string]string{ // name → node selector
		operand.MPSDaemonSet: {operand.LabelPrefix + operand.DevicePlugin: "true", operand.MPSCapableLabel: "true"}}
	for _, o := range ops {
		dss[o.DaemonSet] = map[string]string{o.LabelKey(): "true"}
	}
	for name, selector := range dss {
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, testcluster.DaemonSet(env.Namespace, name, selector, "16Mi"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wantPods := 0
	for _, c := range cases {
		labels := map[string]string{operand.GPUPresent: "true", operand.GPUCountLabel: "8", caseLabel: c.name}
		for _, o := range ops {
			labels[o.LabelKey()] = "true"
		}
		for k, v := range c.labels {
			labels[k] = v
		}
		for _, o := range ops {
			if labels[o.LabelKey()] == "true" {
				wantPods++
			}
		}
		if labels[operand.MPSCapableLabel] == "true" {
			wantPods++
		}
		list := corev1.ResourceList{}
		for name, n := range c.devices {
			list[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
		}
		env.AddNode(t, env.NodeName(c.name), labels, testcluster.WithCapacity(list))
	}
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		ready := 0
		for i := range pods {
			if p := snapshot.PodFrom(&pods[i]); p.Present() && p.Health.Ready {
				ready++
			}
		}
		return ready == wantPods
	})
	time.Sleep(stuckAfter + time.Second) // the MIG change has now lasted longer than --stuck-after

	c := gpuopstest.On(env)
	sel := testcluster.LabelTestID + "=" + env.ID
	args := func(more ...string) []string {
		return append([]string{"health", "--discover", "--stuck-after", stuckAfter.String()}, more...)
	}
	t.Run("healthy kinds: exit 0", func(t *testing.T) {
		var names []string
		for _, nc := range cases {
			if nc.code == "" {
				names = append(names, env.NodeName(nc.name))
			}
		}
		r := c.Want(t, 0, args(names...)...)
		for _, n := range names {
			if !strings.Contains(r.Stdout, n+" READY\n") {
				t.Errorf("no %s READY in\n%s", n, r.Stdout)
			}
		}
	})
	for _, nc := range cases {
		if nc.code == "" {
			continue
		}
		t.Run(nc.name, func(t *testing.T) {
			node := env.NodeName(nc.name)
			r := c.Want(t, 1, args(node)...)
			if line := node + " UNUSABLE " + nc.code + " " + nc.operand; !strings.Contains(r.Stdout, line) {
				t.Errorf("text: no line %q in\n%s", line, r.Stdout)
			}
			var got struct{ Nodes []health.Node }
			r = c.Want(t, 1, args("-o", "json", node)...)
			if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got.Nodes) != 1 || got.Nodes[0].Cause == nil ||
				got.Nodes[0].Cause.Code != nc.code || got.Nodes[0].Cause.Operand != nc.operand || got.Nodes[0].Node != node {
				t.Errorf("json: %v %+v, want %s %s/%s", err, got.Nodes, node, nc.code, nc.operand)
			}
			// A stuck change says how long it has lasted, which grows between runs.
			cause := elapsed.ReplaceAllString(got.Nodes[0].Cause.Message, "")
			r = c.Want(t, 1, args("--explain", node)...)
			if !strings.Contains(elapsed.ReplaceAllString(r.Stdout, ""), cause) || !strings.Contains(r.Stdout, got.Nodes[0].Evidence[0]) {
				t.Errorf("--explain: no cause %q with its evidence %q in\n%s", cause, got.Nodes[0].Evidence, r.Stdout)
			}
			for _, format := range []string{"yaml", "table", "junit"} {
				r = c.Want(t, 1, args("-o", format, node)...)
				if !strings.Contains(r.Stdout, node) || !strings.Contains(r.Stdout, nc.code) {
					t.Errorf("-o %s: no %s and %s in\n%s", format, node, nc.code, r.Stdout)
				}
			}
		})
	}
	t.Run("the fleet: exit 1", func(t *testing.T) { c.Want(t, 1, args("-l", sel)...) })
	// Every judge, in text and JSON, prints from a bundle (gpuops collect)
	// what it prints live.
	t.Run("from is live", func(t *testing.T) {
		c.FromIsLive(t, append(gpuopstest.TextAndJSON(gpuopstest.FromCases(env.NodeName("mig-stuck"), sel)),
			gpuopstest.Golden{Args: args("-l", sel)}, gpuopstest.Golden{Args: args("-l", sel, "-o", "json")}, gpuopstest.Golden{Args: args("-l", sel, "--explain")}))
	})

	// serve follows an edit of the config: the node asked for replicas it
	// does not advertise is usable once its config asks for none, and
	// unusable again when the edit is undone.
	t.Run("serve: a config edit", func(t *testing.T) {
		node := env.NodeName("ts-not-applied")
		opts := pipeline.Options{Namespace: env.Namespace, NodeSelector: caseLabel + "=ts-not-applied", Health: true, Roster: pipeline.DiscoverRoster}
		f := gpuopstest.Follow(t, env.Client, live.Options{Options: opts})
		f.WaitFor(t, node, health.SharingNotApplied)
		edit := func(config string) {
			cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, rehearsal.SharingConfigMap, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.Data["ts"] = config
			if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		edit("version: v1\n")
		f.WaitFor(t, node, "")
		edit(configs.Sharing["ts"])
		f.WaitFor(t, node, health.SharingNotApplied)
	})
}

// elapsed matches a duration in parentheses, as "(8s)" or "(1m5s)".
var elapsed = regexp.MustCompile(`\([0-9hms.]+\)`)

// createPolicy installs the ClusterPolicy the sharing and MIG rehearsals
// write, naming their ConfigMaps, its status naming the test's namespace.
func createPolicy(t *testing.T, env *testcluster.Env) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	policy := rehearsal.Policy(rehearsal.PolicyName, rehearsal.OfferSpec(rehearsal.SharingConfigMap, rehearsal.MIGConfigMap))
	in, err := rehearsal.InstallPolicy(context.Background(), dyn, policy, env.Namespace, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := in.Remove(context.Background()); err != nil {
			t.Error(err)
		}
	})
}
