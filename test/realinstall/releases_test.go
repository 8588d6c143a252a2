package realinstall_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// releases are the installs of each supported GPU Operator release, the
// latest patch of each line: v26.7.0 is testdata/operator.yaml, the others
// testdata/releases/<tag>.yaml, rendered from that tag's assets with
// GPUDirect Storage on (and GDRCopy from v25.10), so that the validator runs
// every init container its release has.
var releases = []struct{ tag, fixture string }{
	{"v24.9.2", "releases/v24.9.2.yaml"},
	{"v25.3.4", "releases/v25.3.4.yaml"},
	{"v25.10.1", "releases/v25.10.1.yaml"},
	{"v26.3.3", "releases/v26.3.3.yaml"},
	{"v26.7.0", "operator.yaml"},
}

// heldKey selects, per DaemonSet, the nodes where its pods are held in an
// init container (value: that container) or run as KWOK makes them
// (heldReady).
const (
	heldKey   = "release.gpuops.test/"
	heldReady = "ready"
)

// The operands whose pods the scenarios place; the ClusterPolicy's
// defaults switch DCGM and the node status exporter off.
var releaseStack = []string{operand.Driver, operand.ContainerToolkit, operand.OperatorValidator,
	operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter}

var gpuClients = []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter}

// releaseScenario is one node: the init container each operand's pod is
// held in (the others Ready), and the root cause: an init-waiting operand
// and what waits behind it; "" is a usable node. Each is what the
// operator's init containers do in that state (Upstream, as operand.Inits
// cites): a validator short of toolkit-ready leaves the GPU clients in their
// toolkit-validation; the validator's plugin-validation waits for the device
// plugin.
type releaseScenario struct {
	name       string
	hostDriver bool              // driver label pre-installed: no driver pod
	held       map[string]string // operand → init container
	cause      string
	blocked    []string
	only       func(r operand.Release) bool // the releases that have the state; nil: all
}

// clientsIn holds the GPU clients in their toolkit-validation, with more.
func clientsIn(more map[string]string) map[string]string {
	out := maps.Clone(more)
	for _, o := range gpuClients {
		out[o] = "toolkit-validation"
	}
	return out
}

var releaseScenarios = []releaseScenario{
	{name: "full"},
	{name: "host-driver", hostDriver: true},
	{name: "driver-manager", held: clientsIn(map[string]string{operand.Driver: "k8s-driver-manager",
		operand.ContainerToolkit: "driver-validation", operand.OperatorValidator: "driver-validation"}),
		cause: operand.Driver, blocked: append([]string{operand.ContainerToolkit, operand.OperatorValidator}, gpuClients...)},
	{name: "toolkit-driver-validation", held: clientsIn(map[string]string{operand.ContainerToolkit: "driver-validation",
		operand.OperatorValidator: "toolkit-validation"}),
		cause: operand.ContainerToolkit, blocked: append([]string{operand.OperatorValidator}, gpuClients...)},
	{name: "validator-driver-validation", held: clientsIn(map[string]string{operand.OperatorValidator: "driver-validation"}),
		cause: operand.OperatorValidator, blocked: gpuClients},
	{name: "validator-nvidia-fs-validation", held: clientsIn(map[string]string{operand.OperatorValidator: "nvidia-fs-validation"}),
		cause: operand.OperatorValidator, blocked: gpuClients, only: func(r operand.Release) bool { return r.NVIDIAFSValidation }},
	{name: "validator-gdrcopy-validation", held: clientsIn(map[string]string{operand.OperatorValidator: "gdrcopy-validation"}),
		cause: operand.OperatorValidator, blocked: gpuClients, only: func(r operand.Release) bool { return r.GDRCopyValidation }},
	{name: "validator-toolkit-validation", held: clientsIn(map[string]string{operand.OperatorValidator: "toolkit-validation"}),
		cause: operand.OperatorValidator, blocked: gpuClients},
	{name: "validator-cuda-validation", held: map[string]string{operand.OperatorValidator: "cuda-validation"},
		cause: operand.OperatorValidator},
	{name: "validator-plugin-validation", held: map[string]string{operand.OperatorValidator: "plugin-validation"},
		cause: operand.OperatorValidator},
	{name: "device-plugin-toolkit-validation", held: map[string]string{operand.DevicePlugin: "toolkit-validation",
		operand.OperatorValidator: "plugin-validation"}, cause: operand.DevicePlugin, blocked: []string{operand.OperatorValidator}},
	{name: "device-plugin-config-manager-init", held: map[string]string{operand.DevicePlugin: "config-manager-init",
		operand.OperatorValidator: "plugin-validation"}, cause: operand.DevicePlugin, blocked: []string{operand.OperatorValidator}},
	{name: "gfd-toolkit-validation", held: map[string]string{operand.GPUFeatureDiscovery: "toolkit-validation"},
		cause: operand.GPUFeatureDiscovery},
	{name: "gfd-imex-init", held: map[string]string{operand.GPUFeatureDiscovery: "gpu-feature-discovery-imex-init"},
		cause: operand.GPUFeatureDiscovery, only: func(r operand.Release) bool { return r.IMEXInit }},
	{name: "gfd-config-manager-init", held: map[string]string{operand.GPUFeatureDiscovery: "config-manager-init"},
		cause: operand.GPUFeatureDiscovery},
	{name: "dcgm-exporter-toolkit-validation", held: map[string]string{operand.DCGMExporter: "toolkit-validation"},
		cause: operand.DCGMExporter},
}

// versionedJSON is what health and audit -o json say, as far as the
// releases need.
type versionedJSON struct {
	Operator *outcome.Operator `json:"operator"`
	Nodes    []struct {
		health.Node
		Missing []string `json:"missing"`
	} `json:"nodes"`
}

// Each supported release, installed as its tag renders it and judged with
// its operator Deployment running the tag: a healthy full node and a
// host-driver node are READY and audit OK, and a node held in each init
// container of the release has that container's operand as its root cause,
// with what waits behind it (audit: the held operands MISSING, as their pods
// do not run); health and audit name the release they judged by.
func TestReleases(t *testing.T) {
	for _, rel := range releases {
		t.Run(rel.tag, func(t *testing.T) {
			release, note := operand.ReleaseOf(rel.tag)
			if note != "" || release.Version != rel.tag[:strings.LastIndex(rel.tag, ".")] {
				t.Fatalf("ReleaseOf(%s) = %s, %q", rel.tag, release.Version, note)
			}
			in := newReleaseInstall(t, rel.fixture, release, rel.tag)
			want := map[string]releaseScenario{}
			for _, sc := range releaseScenarios {
				if sc.only == nil || sc.only(release) {
					want[in.nodes[sc.name]] = sc
				}
			}
			h := in.versioned(t, 1, "health", "-o", "json")
			checkOperator(t, "health", h.Operator, rel.tag, release.Version, "")
			if len(h.Nodes) != len(want) {
				t.Fatalf("health: %d nodes, want %d", len(h.Nodes), len(want))
			}
			for _, n := range h.Nodes {
				checkReleaseVerdict(t, want[n.Node.Node], n.Node)
			}
			a := in.versioned(t, 1, "audit", "-o", "json")
			checkOperator(t, "audit", a.Operator, rel.tag, release.Version, "")
			for _, n := range a.Nodes {
				sc := want[n.Node.Node]
				if got, held := slices.Sorted(slices.Values(n.Missing)), slices.Sorted(maps.Keys(sc.held)); !slices.Equal(got, held) {
					t.Errorf("%s: audit MISSING %q, want the operands held: %q", sc.name, got, held)
				}
			}
			r := in.judge(t, "health", "--explain")
			if line := "note: GPU Operator " + rel.tag + ": judged by the rules of release " + release.Version; strings.Count(r.Stderr, line) != 1 {
				t.Errorf("health --explain: want the note %q once in\n%s", line, r.Stderr)
			}
		})
	}
}

// checkReleaseVerdict: the node is usable, or its root cause is its
// scenario's init-waiting operand with what it blocks.
func checkReleaseVerdict(t *testing.T, sc releaseScenario, n health.Node) {
	t.Helper()
	if sc.cause == "" {
		if !n.Usable || n.Cause != nil || len(n.Also) > 0 {
			t.Errorf("%s: want READY, got %+v cause %+v", sc.name, n, n.Cause)
		}
		return
	}
	code := health.InitWaiting
	if n.Usable || n.Cause == nil || n.Cause.Code != code || n.Cause.Operand != sc.cause {
		t.Errorf("%s: want %s/%s, got usable %v cause %+v", sc.name, code, sc.cause, n.Usable, n.Cause)
		return
	}
	if c := sc.held[sc.cause]; !strings.Contains(n.Cause.Message, "init container "+c+" ") {
		t.Errorf("%s: cause %q does not name init container %s", sc.name, n.Cause.Message, c)
	}
	if got, want := slices.Sorted(slices.Values(n.Blocked)), slices.Sorted(slices.Values(sc.blocked)); !slices.Equal(got, want) {
		t.Errorf("%s: blocks %q, want %q", sc.name, got, want)
	}
	if len(n.Also) > 0 {
		t.Errorf("%s: other causes %+v, want none", sc.name, n.Also)
	}
}

func checkOperator(t *testing.T, cmd string, got *outcome.Operator, version, judgedAs, note string) {
	t.Helper()
	if got == nil || got.Version != version || got.JudgedAs != judgedAs || !strings.Contains(got.Note, note) || note == "" && got.Note != "" {
		t.Errorf("%s -o json: operator %+v, want version %s judged as %s with note %q", cmd, got, version, judgedAs, note)
	}
}

// An operator whose tag names no release gpuops knows is judged as the
// newest, and said so once; one without a tag or by digest likewise. The
// verdicts are the newest release's.
func TestUnknownReleases(t *testing.T) {
	newest := operand.Newest()
	in := newReleaseInstall(t, "operator.yaml", newest, "v27.1.0")
	full := in.nodes["full"]
	for _, tc := range []struct{ image, version, note string }{
		{"nvcr.io/nvidia/gpu-operator:v27.1.0", "v27.1.0", "GPU Operator v27.1.0 is newer than any release gpuops knows: judged as " + newest.Version},
		{"nvcr.io/nvidia/gpu-operator", "latest", `the GPU Operator's image tag "latest" names no release: judged as ` + newest.Version},
		{"nvcr.io/nvidia/gpu-operator@sha256:8e4a0f3c5b7d2e9f1a6c4b8d0e2f4a6c8b0d2e4f6a8c0b2d4e6f8a0c2b4d6e8f", "sha256:8e4a0f3c5b7d2e9f1a6c4b8d0e2f4a6c8b0d2e4f6a8c0b2d4e6f8a0c2b4d6e8f", "names no release"},
	} {
		in.setOperatorImage(t, tc.image)
		h := in.versioned(t, 1, "health", "-o", "json")
		checkOperator(t, "health", h.Operator, tc.version, newest.Version, tc.note)
		for _, n := range h.Nodes {
			if n.Node.Node == full && (!n.Usable || n.Cause != nil) {
				t.Errorf("%s: the full node is not READY: %+v", tc.image, n.Cause)
			}
		}
		if r := in.judge(t, "health", "--explain"); strings.Count(r.Stderr, tc.note) != 1 {
			t.Errorf("%s: health --explain: want the note %q once in\n%s", tc.image, tc.note, r.Stderr)
		}
	}
}

// newReleaseInstall loads a release's fixture with the operator's
// Deployment running tag, a variant of each stack DaemonSet for each init
// container a scenario holds its pods in, and a node per scenario the
// release has.
func newReleaseInstall(t *testing.T, fixture string, release operand.Release, tag string) *install {
	t.Helper()
	in := withCRDs(t)
	in.create(t, operatorDeployment(t, "nvcr.io/nvidia/gpu-operator:"+tag))
	states := map[string][]string{} // DaemonSet → the init containers its pods are held in
	for _, sc := range releaseScenarios {
		if sc.only != nil && !sc.only(release) {
			continue
		}
		for o, c := range sc.held {
			ds := daemonSetOf(t, o)
			if !slices.Contains(states[ds], c) {
				states[ds] = append(states[ds], c)
			}
		}
	}
	for _, u := range docs(t, fixture) {
		if u.GetKind() != "DaemonSet" || !slices.ContainsFunc(releaseStack, func(o string) bool { return daemonSetOf(t, o) == u.GetName() }) {
			in.create(t, u)
			continue
		}
		in.create(t, heldVariant(t, u, heldReady))
		for _, c := range states[u.GetName()] {
			in.create(t, heldVariant(t, u, c))
		}
	}
	pods := 0
	for _, sc := range releaseScenarios {
		if sc.only != nil && !sc.only(release) {
			continue
		}
		pods += len(releaseStack)
		if sc.hostDriver {
			pods--
		}
		name := in.env.NodeName(sc.name)
		in.nodes[sc.name] = name
		labels := map[string]string{operand.GPUPresent: "true", operand.GPUCountLabel: "8"}
		for _, o := range append(releaseStack, operand.DCGM, "node-status-exporter") {
			labels[operand.LabelPrefix+o] = "true"
		}
		if release.ClientLabel {
			labels[operand.LabelPrefix+"client"] = "true"
		}
		if sc.hostDriver {
			labels[operand.LabelPrefix+operand.Driver] = "pre-installed"
		}
		for _, o := range releaseStack {
			labels[heldKey+daemonSetOf(t, o)] = heldReady
		}
		for o, c := range sc.held {
			labels[heldKey+daemonSetOf(t, o)] = c
		}
		in.env.AddNode(t, name, labels, func(n *corev1.Node) {
			gpus := *resource.NewQuantity(8, resource.DecimalSI)
			n.Status.Capacity["nvidia.com/gpu"], n.Status.Allocatable["nvidia.com/gpu"] = gpus, gpus
		})
	}
	// Settled: a pod of each operand on each node, Ready or held where its
	// DaemonSet holds it, as the snapshot reads it.
	in.env.WaitForPods(t, in.env.Namespace, func(ps []corev1.Pod) bool {
		if len(ps) != pods {
			return false
		}
		for i := range ps {
			h := snapshot.PodFrom(&ps[i]).Health
			if held := ps[i].Annotations["gpuops.test/init-container"]; held == "" && !h.Ready || held != "" && h.Init != held {
				return false
			}
		}
		return true
	})
	return in
}

func daemonSetOf(t *testing.T, name string) string {
	t.Helper()
	o, err := operand.Lookup(operand.Real, name)
	if err != nil {
		t.Fatal(err)
	}
	return o.DaemonSet
}

// heldVariant is the fixture's DaemonSet on the nodes that hold its pods in
// the init container named (KWOK's init-waiting stage, hack/kwokctl.yaml),
// or as it is (heldReady): its own name, and the held key in its selector.
// It still selects the operand's deploy label, so --discover takes it for a
// DaemonSet of the operand.
func heldVariant(t *testing.T, u *unstructured.Unstructured, state string) *unstructured.Unstructured {
	t.Helper()
	v := u.DeepCopy()
	base := u.GetName()
	if state != heldReady {
		name := base + "-" + strings.Split(state, "-")[0] // short: the pods' app label must fit
		v.SetName(name)
		for _, path := range [][]string{{"metadata", "labels"}, {"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
			if err := unstructured.SetNestedField(v.Object, name, append(path, "app")...); err != nil {
				t.Fatal(err)
			}
		}
		if err := unstructured.SetNestedStringMap(v.Object, map[string]string{"gpuops.test/pod-state": "init-waiting", "gpuops.test/init-container": state},
			"spec", "template", "metadata", "annotations"); err != nil {
			t.Fatal(err)
		}
	}
	if err := unstructured.SetNestedField(v.Object, state, "spec", "template", "spec", "nodeSelector", heldKey+base); err != nil {
		t.Fatal(err)
	}
	return v
}

// operatorDeployment is the GPU Operator's Deployment as the chart renders
// it, as far as the reader looks: its component label and container
// (NVIDIA/gpu-operator deployments/gpu-operator/templates/operator.yaml).
// It selects no node of the test's: its pod, if any, stays Pending.
func operatorDeployment(t *testing.T, image string) *unstructured.Unstructured {
	t.Helper()
	labels := map[string]any{"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "gpu-operator", "labels": labels},
		"spec": map[string]any{
			"replicas": int64(0),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "gpu-operator", "image": image, "command": []any{"gpu-operator"}}}},
			},
		},
	}}
}

// setOperatorImage patches the operator Deployment's image.
func (in *install) setOperatorImage(t *testing.T, image string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "gpu-operator", "image": image}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.env.Client.AppsV1().Deployments(in.env.Namespace).Patch(context.Background(), "gpu-operator", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// versioned runs a judge with -o json and decodes it; code is the exit it
// must have.
func (in *install) versioned(t *testing.T, code int, args ...string) versionedJSON {
	t.Helper()
	r := in.judge(t, args...)
	var v versionedJSON
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || r.Code != code {
		t.Fatalf("%s: exit %d (want %d), %v\n%s%s", strings.Join(args, " "), r.Code, code, err, r.Stdout, r.Stderr)
	}
	return v
}
