package explain_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

var (
	driver  = operand.Lab.Driver()
	toolkit = operand.Lab.ContainerToolkit()
	plugin  = operand.Lab.DevicePlugin()
	gfd     = operand.Lab.GPUFeatureDiscovery()
)

const ns = "gpu-operator"

// ds is a DaemonSet as the lab and the operator write them.
var ds = snapshottest.DaemonSet

func gpuNode(labels ...string) snapshot.Node {
	n := snapshot.Node{Name: "n", Ready: true, Labels: map[string]string{plugin.LabelKey(): "true"}}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

func pod(phase corev1.PodPhase, on string) snapshot.Pod {
	return snapshot.Pod{Name: "p", Node: on, DaemonSet: plugin.DaemonSet, Phase: phase}
}

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

type reason struct{ code, contains string }

func TestWhy(t *testing.T) {
	tolerant := ds(plugin)
	tolerant.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	hostNet := ds(plugin)
	hostNet.HostNetwork = true
	extraSelector := ds(plugin)
	extraSelector.NodeSelector["nvidia.com/gpu.present"] = "true"
	affinity := ds(plugin)
	affinity.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}},
		}}},
	}}
	unscheduled := pod(corev1.PodPending, "")
	unscheduled.Target = "n"
	unscheduled.Reason = "0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn't match Pod's node affinity/selector."
	elsewhere := unscheduled
	elsewhere.Target = "m"
	pulling := pod(corev1.PodPending, "n")
	pulling.Reason = "ImagePullBackOff: Back-off pulling image"
	evicted := pod(corev1.PodFailed, "n")
	evicted.Reason = "Evicted: The node was low on resource: memory."
	deleting := pod(corev1.PodRunning, "n")
	deleting.Deleting = true
	notReady := gpuNode()
	notReady.Ready = false
	cordoned := gpuNode()
	cordoned.Unschedulable = true
	cordoned.Taints = []corev1.Taint{taint(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule)}

	for _, tc := range []struct {
		name string
		node snapshot.Node
		dss  []snapshot.DaemonSet
		pods []snapshot.Pod
		want []reason
	}{
		{"no DaemonSet", gpuNode(), nil, nil,
			[]reason{{explain.NoDaemonSet, "no DaemonSet nvidia-device-plugin-daemonset in namespace gpu-operator"}}},
		{"another operand's DaemonSet only", gpuNode(), []snapshot.DaemonSet{ds(driver)}, nil,
			[]reason{{explain.NoDaemonSet, "no DaemonSet nvidia-device-plugin-daemonset"}}},
		{"nodeSelector key the node lacks", gpuNode(), []snapshot.DaemonSet{extraSelector}, nil,
			[]reason{{explain.NotSelected, "selects nvidia.com/gpu.present=true; the node has no label nvidia.com/gpu.present"}}},
		{"nodeSelector value differs", gpuNode("nvidia.com/gpu.present", "false"), []snapshot.DaemonSet{extraSelector}, nil,
			[]reason{{explain.NotSelected, "the node has nvidia.com/gpu.present=false"}}},
		{"required node affinity", gpuNode("kubernetes.io/arch", "amd64"), []snapshot.DaemonSet{affinity}, nil,
			[]reason{{explain.NotSelected, "does not match its required node affinity"}}},
		{"untolerated NoSchedule taint", withTaints(gpuNode(), taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)), []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.UntoleratedTaint, "does not tolerate the node's taint nvidia.com/gpu=present:NoSchedule"}}},
		{"untolerated NoExecute taint", withTaints(gpuNode(), taint("dedicated", "", corev1.TaintEffectNoExecute)), []snapshot.DaemonSet{tolerant}, nil,
			[]reason{{explain.UntoleratedTaint, "taint dedicated:NoExecute"}}},
		{"tolerated taint: the controller is behind", withTaints(gpuNode(), taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)), []snapshot.DaemonSet{tolerant}, nil,
			[]reason{{explain.NoPodYet, "admits the node but has no pod there yet"}}},
		{"PreferNoSchedule does not keep a DaemonSet off", withTaints(gpuNode(), taint("soft", "", corev1.TaintEffectPreferNoSchedule)), []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.NoPodYet, ""}}},
		{"default tolerations: pressure taints", withTaints(gpuNode(),
			taint(corev1.TaintNodeDiskPressure, "", corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodeMemoryPressure, "", corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodePIDPressure, "", corev1.TaintEffectNoSchedule),
			taint(corev1.TaintNodeUnreachable, "", corev1.TaintEffectNoExecute)), []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.NoPodYet, ""}}},
		{"not-ready NoSchedule is not tolerated by default", withTaints(gpuNode(), taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoSchedule)), []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.UntoleratedTaint, "node.kubernetes.io/not-ready:NoSchedule"}}},
		{"network-unavailable without host network", withTaints(gpuNode(), taint(corev1.TaintNodeNetworkUnavailable, "", corev1.TaintEffectNoSchedule)), []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.UntoleratedTaint, "network-unavailable"}}},
		{"network-unavailable with host network", withTaints(gpuNode(), taint(corev1.TaintNodeNetworkUnavailable, "", corev1.TaintEffectNoSchedule)), []snapshot.DaemonSet{hostNet}, nil,
			[]reason{{explain.NoPodYet, ""}}},
		{"cordoned: DaemonSet pods tolerate it", cordoned, []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.NodeCordoned, "cordoned"}, {explain.NoPodYet, ""}}},
		{"pending, unscheduled: the scheduler's message", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{unscheduled},
			[]reason{{explain.PodPending, "pod p is Pending, not scheduled: 0/3 nodes are available: 1 Insufficient memory"}}},
		{"pending pod made for another node", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{elsewhere},
			[]reason{{explain.NoPodYet, ""}}},
		{"pending on the node", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{pulling},
			[]reason{{explain.PodPending, "pod p is Pending on the node: ImagePullBackOff"}}},
		{"failed", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{evicted},
			[]reason{{explain.PodFailed, "pod p Failed: Evicted: The node was low on resource: memory."}}},
		{"succeeded", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{pod(corev1.PodSucceeded, "n")},
			[]reason{{explain.PodSucceeded, "containers exited"}}},
		{"unknown on a NotReady node", notReady, []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{pod(corev1.PodUnknown, "n")},
			[]reason{{explain.NodeNotReady, "NotReady"}, {explain.PodUnknown, "pod p is Unknown"}}},
		{"being deleted", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{deleting},
			[]reason{{explain.PodDeleting, "pod p is being deleted"}}},
		{"operands switched off on the node", gpuNode(operand.OperandsLabel, "false"), []snapshot.DaemonSet{ds(plugin)}, nil,
			[]reason{{explain.OperandsDisabled, "operands=false"}, {explain.NoPodYet, ""}}},
		{"running: nothing to explain", gpuNode(), []snapshot.DaemonSet{ds(plugin)}, []snapshot.Pod{pod(corev1.PodRunning, "n")}, nil},
		{"a pod of an unrelated DaemonSet", gpuNode(), []snapshot.DaemonSet{ds(plugin)},
			[]snapshot.Pod{{Name: "q", Node: "n", DaemonSet: "other", Phase: corev1.PodPending}},
			[]reason{{explain.NoPodYet, ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{tc.node}, DaemonSets: tc.dss, Pods: tc.pods}
			checkReasons(t, explain.New(s).Why("n", plugin), tc.want)
		})
	}
}

func withTaints(n snapshot.Node, taints ...corev1.Taint) snapshot.Node {
	n.Taints = taints
	return n
}

func checkReasons(t *testing.T, got []explain.Reason, want []reason) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("reasons %+v, want %d: %+v", got, len(want), want)
	}
	for i, w := range want {
		if got[i].Code != w.code || !strings.Contains(got[i].Message, w.contains) {
			t.Errorf("reason %d = %+v, want code %s containing %q", i, got[i], w.code, w.contains)
		}
	}
}

// Precompiled drivers: one DaemonSet per kernel. Only the one meant for the
// node speaks when there is one; otherwise each says why it is not.
func TestWhyVariants(t *testing.T) {
	const kernelKey = "feature.node.kubernetes.io/kernel-version.full"
	variant := func(kernel string) snapshot.DaemonSet {
		return snapshot.DaemonSet{Name: "nvidia-driver-daemonset-" + kernel + "-ubuntu22.04",
			NodeSelector: map[string]string{driver.LabelKey(): "true", kernelKey: kernel}}
	}
	a, b := variant("5.15.0-105-generic"), variant("6.8.0-40-generic")
	roster := slices.Clone(operand.Lab)
	roster[0].DaemonSet, roster[0].Variants = a.Name, []string{b.Name}
	node := snapshot.Node{Name: "n", Ready: true, Labels: map[string]string{driver.LabelKey(): "true", kernelKey: "6.8.0-40-generic"}}
	pending := snapshot.Pod{Name: "d", Target: "n", DaemonSet: b.Name, Phase: corev1.PodPending, Reason: "0/1 nodes are available: 1 Insufficient memory."}

	s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{node}, DaemonSets: []snapshot.DaemonSet{a, b}, Pods: []snapshot.Pod{pending}}
	checkReasons(t, explain.New(s).Why("n", roster[0]), []reason{{explain.PodPending, "Insufficient memory"}})

	node.Labels[kernelKey] = "6.1.0"
	s = &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{node}, DaemonSets: []snapshot.DaemonSet{a, b}}
	checkReasons(t, explain.New(s).Why("n", roster[0]), []reason{
		{explain.NotSelected, a.Name + " selects " + kernelKey + "=5.15.0-105-generic; the node has " + kernelKey + "=6.1.0"},
		{explain.NotSelected, b.Name + " selects " + kernelKey + "=6.8.0-40-generic"},
	})
}

func TestWarnings(t *testing.T) {
	selectsAny := ds(plugin)
	selectsAny.NodeSelector = nil
	selectsAny.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: plugin.LabelKey(), Operator: corev1.NodeSelectorOpExists}},
		}}},
	}}
	for _, tc := range []struct {
		name, value string
		dss         []snapshot.DaemonSet
		want        string // "" for no warning
	}{
		{"true", "true", []snapshot.DaemonSet{ds(plugin)}, ""},
		{"false", "false", []snapshot.DaemonSet{ds(plugin)}, ""},
		{"True", "True", []snapshot.DaemonSet{ds(plugin)}, "label is 'True', not 'true': the DaemonSet will not run here"},
		{"TRUE", "TRUE", []snapshot.DaemonSet{ds(plugin)}, "label is 'TRUE', not 'true': the DaemonSet will not run here"},
		{"yes", "yes", []snapshot.DaemonSet{ds(plugin)}, "label is 'yes', not 'true': the DaemonSet will not run here"},
		{"False", "False", []snapshot.DaemonSet{ds(plugin)}, "label is 'False', not 'false': the DaemonSet will not run here"},
		{"empty", "", []snapshot.DaemonSet{ds(plugin)}, "label is empty, not 'true': the DaemonSet will not run here (the operator takes an empty value for unset and will set it to 'true')"},
		{"pre-installed", "pre-installed", []snapshot.DaemonSet{ds(plugin)}, "label is 'pre-installed': the host provides this, so the DaemonSet will not run here"},
		{"paused", "paused-for-driver-upgrade", []snapshot.DaemonSet{ds(plugin)},
			"label is 'paused-for-driver-upgrade': the driver manager paused this operand across a driver upgrade, so the DaemonSet will not run here; the label goes back to 'true' when it is done"},
		{"a DaemonSet that selects any value", "yes", []snapshot.DaemonSet{selectsAny},
			"label is 'yes', not 'true': the DaemonSet nvidia-device-plugin-daemonset will still run here"},
		{"no DaemonSet", "True", nil, "label is 'True', not 'true': a DaemonSet that selects 'true' will not run here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := snapshot.Node{Name: "n", Ready: true, Labels: map[string]string{plugin.LabelKey(): tc.value}}
			s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{n}, DaemonSets: tc.dss}
			got := explain.New(s).Warnings("n", operand.Lab)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("warnings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Message != tc.want || got[0].Label != plugin.LabelKey() || got[0].Value != tc.value {
				t.Fatalf("warnings %+v, want one on %s: %q", got, plugin.LabelKey(), tc.want)
			}
		})
	}
}

// An empty deploy label becomes "true" only where it belongs to the node's
// workload config; the operator's labeller removes the other configs' keys.
func TestEmptyDeployLabels(t *testing.T) {
	sandbox := &snapshot.ClusterPolicy{Name: "cluster-policy", Namespace: ns, Enabled: map[string]bool{"sandboxWorkloads": true}}
	kata := &snapshot.ClusterPolicy{Name: "cluster-policy", Namespace: ns, Enabled: map[string]bool{"sandboxWorkloads": true}, SandboxMode: "kata"}
	noSandbox := &snapshot.ClusterPolicy{Name: "cluster-policy", Namespace: ns}
	const (
		sets = " (the operator takes an empty value for unset and will set it to 'true')"
		none = ""
	)
	removes := func(name, config string) string {
		return " (the operator removes it: " + name + " is not an operand of the node's workload config, " + config + ")"
	}
	for _, tc := range []struct {
		name    string
		config  string // the node's workload config label; "" for none
		policy  *snapshot.ClusterPolicy
		operand string // whose deploy label is empty
		want    string // the message's parenthesis
	}{
		{"vm-passthrough: the device plugin", operand.VMPassthrough, sandbox, operand.DevicePlugin, removes(operand.DevicePlugin, operand.VMPassthrough)},
		{"vm-passthrough: the driver", operand.VMPassthrough, sandbox, operand.Driver, removes(operand.Driver, operand.VMPassthrough)},
		{"vm-passthrough: the toolkit", operand.VMPassthrough, sandbox, operand.ContainerToolkit, removes(operand.ContainerToolkit, operand.VMPassthrough)},
		{"vm-passthrough: the MIG manager", operand.VMPassthrough, sandbox, operand.MIGManager, removes(operand.MIGManager, operand.VMPassthrough)},
		{"vm-passthrough: the vGPU manager", operand.VMPassthrough, sandbox, operand.VGPUManager, removes(operand.VGPUManager, operand.VMPassthrough)},
		{"vm-passthrough: the VFIO manager", operand.VMPassthrough, sandbox, "vfio-manager", sets},
		{"vm-passthrough: the sandbox device plugin", operand.VMPassthrough, sandbox, "sandbox-device-plugin", sets},
		{"vm-passthrough: the kata device plugin", operand.VMPassthrough, sandbox, "kata-sandbox-device-plugin", removes("kata-sandbox-device-plugin", operand.VMPassthrough)},
		{"vm-passthrough, kata: the kata device plugin", operand.VMPassthrough, kata, "kata-sandbox-device-plugin", sets},
		{"vm-passthrough, kata: the sandbox device plugin", operand.VMPassthrough, kata, "sandbox-device-plugin", removes("sandbox-device-plugin", operand.VMPassthrough)},
		{"vm-vgpu: the vGPU manager", operand.VMVGPU, sandbox, operand.VGPUManager, sets},
		{"vm-vgpu: the vGPU device manager", operand.VMVGPU, sandbox, operand.VGPUDeviceManager, sets},
		{"vm-vgpu: the sandbox device plugin", operand.VMVGPU, kata, "sandbox-device-plugin", sets},
		{"vm-vgpu: the device plugin", operand.VMVGPU, sandbox, operand.DevicePlugin, removes(operand.DevicePlugin, operand.VMVGPU)},
		{"vm-vgpu: GFD", operand.VMVGPU, sandbox, operand.GPUFeatureDiscovery, removes(operand.GPUFeatureDiscovery, operand.VMVGPU)},
		{"vm-vgpu: the VFIO manager", operand.VMVGPU, sandbox, "vfio-manager", removes("vfio-manager", operand.VMVGPU)},
		{"container by default: the device plugin", "", sandbox, operand.DevicePlugin, sets},
		{"container by default: the sandbox validator", "", sandbox, "sandbox-validator", removes("sandbox-validator", operand.Container)},
		{"container: the MIG manager (set only when absent)", operand.Container, sandbox, operand.MIGManager, none},
		{"container: the DRA driver (a GPUCluster's)", operand.Container, sandbox, operand.DRADriver, none},
		{"an unknown config is container", "vm-other", sandbox, operand.DevicePlugin, sets},
		{"sandbox workloads off: the label is ignored", operand.VMPassthrough, noSandbox, operand.DevicePlugin, sets},
		{"sandbox workloads off: vfio-manager", operand.VMPassthrough, noSandbox, "vfio-manager", removes("vfio-manager", operand.Container)},
		{"no ClusterPolicy: the label is taken", operand.VMPassthrough, nil, operand.DevicePlugin, removes(operand.DevicePlugin, operand.VMPassthrough)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := operand.Lookup(operand.Real, tc.operand)
			if err != nil {
				t.Fatal(err)
			}
			labels := map[string]string{operand.GPUPresent: "true", o.LabelKey(): ""}
			if tc.config != "" {
				labels[operand.WorkloadConfigLabel] = tc.config
			}
			s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{{Name: "n", Ready: true, Labels: labels}}, Policy: tc.policy}
			got := explain.New(s).Warnings("n", operand.Real)
			want := "label is empty, not 'true': a DaemonSet that selects 'true' will not run here" + tc.want
			if len(got) != 1 || got[0].Code != explain.LabelValue || got[0].Label != o.LabelKey() || got[0].Message != want {
				t.Fatalf("warnings %+v, want one on %s: %q", got, o.LabelKey(), want)
			}
		})
	}
	// Where the labeller removes every deploy label, it removes this one too.
	for _, tc := range []struct {
		name   string
		labels map[string]string
		policy *snapshot.ClusterPolicy
		want   string
	}{
		{"operands off", map[string]string{operand.GPUPresent: "true", operand.OperandsLabel: "false"}, nil,
			" (the operator removes it: the node has nvidia.com/gpu.deploy.operands=false)"},
		{"no GPU", map[string]string{operand.GPUPresent: "false"}, noSandbox,
			" (the operator removes it: the node has no nvidia.com/gpu.present=true)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.labels[plugin.LabelKey()] = ""
			s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{{Name: "n", Ready: true, Labels: tc.labels}}, Policy: tc.policy}
			got := explain.New(s).Warnings("n", operand.Lab)
			i := slices.IndexFunc(got, func(w explain.Warning) bool { return w.Label == plugin.LabelKey() })
			if want := "label is empty, not 'true': a DaemonSet that selects 'true' will not run here" + tc.want; i < 0 || got[i].Message != want {
				t.Fatalf("warnings %+v, want one on %s: %q", got, plugin.LabelKey(), want)
			}
		})
	}
}

func TestOperandsLabel(t *testing.T) {
	running := snapshot.Pod{Name: "dp", Node: "n", DaemonSet: plugin.DaemonSet, Phase: corev1.PodRunning}
	pending := snapshot.Pod{Name: "dr", Node: "n", DaemonSet: driver.DaemonSet, Phase: corev1.PodPending}
	for _, tc := range []struct {
		value          string
		warning        string
		unexpectedPods []string
	}{
		{"false", "the node asks for no operand", []string{"dp"}},
		{"False", "label is 'False', not 'false': the operator does not switch operands off here", nil},
		{"true", "", nil},
	} {
		t.Run(tc.value, func(t *testing.T) {
			n := snapshot.Node{Name: "n", Ready: true, Labels: map[string]string{operand.OperandsLabel: tc.value}}
			s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{n}, Pods: []snapshot.Pod{running, pending}}
			x := explain.New(s)
			w := x.Warnings("n", operand.Lab)
			if tc.warning == "" && len(w) != 0 || tc.warning != "" && (len(w) != 1 || !strings.Contains(w[0].Message, tc.warning)) {
				t.Errorf("warnings %+v, want %q", w, tc.warning)
			}
			var pods []string
			for _, u := range x.Unexpected("n", operand.Lab) {
				pods = append(pods, u.Pod)
				if u.Operand != plugin.Name || !strings.Contains(u.Message, "Running although the node has nvidia.com/gpu.deploy.operands=false") {
					t.Errorf("unexpected %+v", u)
				}
			}
			if !slices.Equal(pods, tc.unexpectedPods) {
				t.Errorf("unexpected pods %q, want %q", pods, tc.unexpectedPods)
			}
		})
	}
}

// Every finding of an audit has its reasons, and the node that asks for
// nothing its unexpected pod and its warnings.
func TestExplainedAudit(t *testing.T) {
	s := &snapshot.Snapshot{
		Namespace: ns,
		Nodes: []snapshot.Node{
			{Name: "b", Ready: true, Labels: map[string]string{operand.OperandsLabel: "false", driver.LabelKey(): "True"}},
			{Name: "a", Ready: true, Labels: map[string]string{driver.LabelKey(): "true", plugin.LabelKey(): "true"}},
		},
		DaemonSets: []snapshot.DaemonSet{ds(plugin)},
		Pods: []snapshot.Pod{
			{Name: "dp-a", Target: "a", DaemonSet: plugin.DaemonSet, Phase: corev1.PodPending, Reason: "0/2 nodes are available: 1 Insufficient memory."},
			{Name: "dp-b", Node: "b", DaemonSet: plugin.DaemonSet, Phase: corev1.PodRunning},
		},
	}
	audits := judge.Audit(s, operand.Lab)
	r := explain.Explain(s, operand.Lab, audits, explain.Clock{})
	var got []string
	for _, m := range r.Missing {
		got = append(got, m.Node+" missing "+m.Operand+": "+explain.Messages(m.Reasons))
	}
	for _, u := range r.Unexpected {
		got = append(got, u.Node+" unexpected "+u.Operand+" "+u.Pod+": "+u.Message)
	}
	for _, w := range r.Warnings {
		got = append(got, w.Node+" warning "+w.Label+": "+w.Message)
	}
	want := []string{
		"a missing driver: no DaemonSet nvidia-driver-daemonset in namespace gpu-operator",
		"a missing device-plugin: pod dp-a is Pending, not scheduled: 0/2 nodes are available: 1 Insufficient memory.",
		"b unexpected device-plugin dp-b: pod dp-b is Running although the node has nvidia.com/gpu.deploy.operands=false",
		"b warning nvidia.com/gpu.deploy.operands: the node asks for no operand: the operator removes its deploy labels, and operand pods still here are unexpected",
		"b warning nvidia.com/gpu.deploy.driver: label is 'True', not 'true': a DaemonSet that selects 'true' will not run here",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(audits) != 2 || !slices.Equal(audits[0].Missing, []string{driver.Name, plugin.Name}) || !audits[1].OK() {
		t.Errorf("audits %+v, want a missing the driver and the device plugin, b OK", audits)
	}
}

// The states a real install's labels are in: each with its code, and a
// pause with who wrote it, when, the helper's progress and whether it is
// stuck.
func TestLabelStates(t *testing.T) {
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	clock := explain.Clock{Now: now, StuckAfter: 30 * time.Minute}
	changed := func(by string, ago time.Duration, ops ...operand.Operand) map[string]snapshot.LabelChange {
		m := map[string]snapshot.LabelChange{}
		for _, o := range ops {
			m[o.LabelKey()] = snapshot.LabelChange{Manager: by, Time: now.Add(-ago)}
		}
		return m
	}
	policy := &snapshot.ClusterPolicy{Name: "cluster-policy", Namespace: ns}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		changes map[string]snapshot.LabelChange
		policy  *snapshot.ClusterPolicy
		want    []explain.Warning // Node, Label and Value are checked too; Message by its parts
		parts   []string
	}{
		{"a MIG change", map[string]string{plugin.LabelKey(): "paused-for-mig-change", gfd.LabelKey(): "paused-for-mig-change", "nvidia.com/mig.config.state": "pending"},
			changed("nvidia-mig-manager", 4*time.Minute, plugin, gfd), nil,
			[]explain.Warning{
				{Code: "paused-for-mig-change", Operand: plugin.Name, By: "nvidia-mig-manager", Progress: "nvidia.com/mig.config.state=pending"},
				{Code: "paused-for-mig-change", Operand: gfd.Name, By: "nvidia-mig-manager", Progress: "nvidia.com/mig.config.state=pending"},
			},
			[]string{"label is 'paused-for-mig-change', written by nvidia-mig-manager 4m0s ago: the MIG manager paused this operand while it repartitions the GPUs, so the DaemonSet will not run here; nvidia.com/mig.config.state=pending; the label goes back to 'true' when it is done"}},
		{"a driver upgrade 3h ago", map[string]string{toolkit.LabelKey(): "paused-for-driver-upgrade", "nvidia.com/gpu-driver-upgrade-state": "pod-restart-required"},
			changed("driver-manager", 3*time.Hour, toolkit), nil,
			[]explain.Warning{{Code: "paused-for-driver-upgrade", Operand: toolkit.Name, By: "driver-manager", Progress: "nvidia.com/gpu-driver-upgrade-state=pod-restart-required", Stuck: true}},
			[]string{"written by driver-manager 3h0m0s ago, longer than --stuck-after 30m0s: the driver manager paused this operand across a driver upgrade"}},
		{"a suffixed pause by hand", map[string]string{driver.LabelKey(): "pre-installed_paused-for-driver-upgrade"},
			changed("kubectl-label", time.Minute, driver), nil,
			[]explain.Warning{{Code: "paused-for-driver-upgrade", Operand: driver.Name, By: "kubectl-label"}},
			[]string{"written by kubectl-label (not driver-manager, which writes this value) 1m0s ago", "the label goes back to 'pre-installed' when it is done"}},
		{"a pause of unknown age", map[string]string{plugin.LabelKey(): "paused-for-vgpu-change"}, nil, nil,
			[]explain.Warning{{Code: "paused-for-vgpu-change", Operand: plugin.Name}},
			[]string{"label is 'paused-for-vgpu-change': the vGPU device manager paused this operand while it changes the vGPU devices"}},
		{"a host driver", map[string]string{driver.LabelKey(): "pre-installed", operand.GPUPresent: "true"}, nil, policy,
			[]explain.Warning{{Code: "host-provided", Operand: driver.Name}}, nil},
		{"deploy labels without a GPU", map[string]string{plugin.LabelKey(): "true"}, nil, policy,
			[]explain.Warning{{Code: "gpu-not-present", Label: operand.GPUPresent}},
			[]string{"deploy labels (nvidia.com/gpu.deploy.device-plugin) on a node with no label nvidia.com/gpu.present: the operator removes them"}},
		{"deploy labels, GPU gone", map[string]string{plugin.LabelKey(): "true", operand.GPUPresent: "false"}, nil, policy,
			[]explain.Warning{{Code: "gpu-not-present", Label: operand.GPUPresent, Value: "false"}},
			[]string{"on a node with nvidia.com/gpu.present='false'"}},
		{"deploy labels without a GPU, no ClusterPolicy (the lab)", map[string]string{plugin.LabelKey(): "true"}, nil, nil, nil, nil},
		{"no GPU, no deploy label", map[string]string{operand.GPUPresent: "false"}, nil, policy, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := snapshot.Node{Name: "n", Ready: true, Labels: tc.labels, LabelChanges: tc.changes}
			s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{n}, DaemonSets: []snapshot.DaemonSet{ds(plugin)}, Policy: tc.policy}
			audits := judge.Audit(s, operand.Lab)
			got := explain.Explain(s, operand.Lab, audits, clock).Warnings
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %+v, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if w.Label == "" {
					w.Label = operand.LabelPrefix + w.Operand
				}
				if w.Value == "" && w.Code != "gpu-not-present" {
					w.Value = tc.labels[w.Label]
				}
				if g.Node != "n" || g.Code != w.Code || g.Operand != w.Operand || g.Label != w.Label || g.Value != w.Value ||
					g.By != w.By || g.Progress != w.Progress || g.Stuck != w.Stuck || (g.Since != nil) != (w.By != "") {
					t.Errorf("warning %d: %+v, want %+v", i, g, w)
				}
			}
			for _, part := range tc.parts {
				if !strings.Contains(got[0].Message, part) {
					t.Errorf("message %q, want it to say %q", got[0].Message, part)
				}
			}
		})
	}
}

// A pause stuck longer than --stuck-after is a STUCK line with its reasons,
// and no WARNING too; operands the ClusterPolicy switches off are listed.
func TestStuckAndDisabled(t *testing.T) {
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	n := snapshot.Node{Name: "n", Ready: true,
		Labels:       map[string]string{toolkit.LabelKey(): "paused-for-driver-upgrade", driver.LabelKey(): "true"},
		LabelChanges: map[string]snapshot.LabelChange{toolkit.LabelKey(): {Manager: "driver-manager", Time: now.Add(-time.Hour)}}}
	s := &snapshot.Snapshot{Namespace: ns, Nodes: []snapshot.Node{n}, Notes: []string{"a note"}}
	roster := slices.Clone(operand.Lab)
	roster[0].Off = "ClusterPolicy cp: spec.driver.enabled is false"
	audits := judge.Audit(s, roster)
	judge.Stuck(audits, s, roster, now, 30*time.Minute)
	r := explain.Explain(s, roster, audits, explain.Clock{Now: now, StuckAfter: 30 * time.Minute})
	want := "label is 'paused-for-driver-upgrade', written by driver-manager 1h0m0s ago, longer than --stuck-after 30m0s: " +
		"the driver manager paused this operand across a driver upgrade, so a DaemonSet that selects 'true' will not run here; the label goes back to 'true' when it is done"
	if len(audits) != 1 || len(audits[0].Missing) != 0 || !slices.Equal(audits[0].Stuck, []string{toolkit.Name}) {
		t.Errorf("audits %+v, want n with the toolkit stuck and nothing missing", audits)
	}
	if len(r.Warnings) != 1 || !r.Warnings[0].Stuck || r.Warnings[0].Operand != toolkit.Name || r.Warnings[0].Message != want {
		t.Errorf("warnings %+v, want the toolkit's stuck pause: %s", r.Warnings, want)
	}
	if !slices.Equal(r.Disabled, []explain.Off{{Operand: "driver", Reason: "ClusterPolicy cp: spec.driver.enabled is false"}}) || !slices.Equal(r.Notes, []string{"a note"}) {
		t.Errorf("disabled %+v, notes %q", r.Disabled, r.Notes)
	}
}
