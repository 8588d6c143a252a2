package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
)

// role is what kind of node a fleet member is.
type role int

const (
	gpu       role = iota // asks for its operands and runs them all
	noGPU                 // no deploy label at all
	tainted               // asks for all five, but carries a taint no DaemonSet tolerates
	lowMemory             // too little memory for the driver pod (512Mi): it stays Pending
)

// brokenTaint keeps every operand off a node.
var brokenTaint = corev1.Taint{Key: "gpuops.bench/broken", Value: "true", Effect: corev1.TaintEffectNoSchedule}

// lowMemory nodes opt out of dcgm-exporter, so the other three 128Mi pods
// always fit while the 512Mi driver never does.
const lowMemoryCapacity = "448Mi"

type fleetNode struct {
	name     string
	index    int // its place in the fleet, which dresses it (fleettest.DressNode)
	role     role
	operands map[string]bool // deploy label values; an operand left out has no label
	offer    offer           // how it offers its GPUs (-offers, offers.go)
}

// plan lays out a fleet of n nodes: mostly GPU nodes with all five operands,
// some opting out of the driver (host driver) or of dcgm-exporter, one in a
// hundred without GPU, and per 500 nodes one tainted and one low-memory node.
// Names are zero-padded so that natural and plain order agree. With offers,
// a share of the healthy GPU nodes that run the driver offer their GPUs
// otherwise (offers.go).
func plan(n int, offers bool) []fleetNode {
	width := max(4, len(fmt.Sprint(n-1)))
	broken := max(2, n/500)
	out := make([]fleetNode, n)
	for i := range out {
		f := fleetNode{name: fmt.Sprintf("gpu-node-%0*d", width, i), index: i, role: gpu, operands: map[string]bool{}}
		switch {
		case i >= n-broken:
			f.role = lowMemory
		case i%500 == min(250, n/2):
			f.role = tainted
		case i%100 == 99:
			f.role = noGPU
		}
		if f.role != noGPU {
			for _, o := range operand.Lab {
				f.operands[o.Name] = true
			}
		}
		if f.role == gpu && i%20 == 3 {
			f.operands[operand.Driver] = false
		}
		if (f.role == gpu && i%50 == 11) || f.role == lowMemory {
			f.operands["dcgm-exporter"] = false
		}
		if offers && f.role == gpu && f.operands[operand.Driver] {
			f.offer = offerOf(i)
		}
		out[i] = f
	}
	return out
}

// asks reports whether the node's deploy label asks for the operand.
func (f fleetNode) asks(o operand.Operand) bool {
	if o.Name == operand.DRADriver {
		return f.offer == dra
	}
	return f.operands[o.Name]
}

// runs reports whether the operand's pod runs on the node once settled.
func (f fleetNode) runs(o operand.Operand) bool {
	switch f.role {
	case tainted:
		return false
	case lowMemory:
		return f.asks(o) && o.Name != operand.Driver
	}
	return f.asks(o)
}

// expectedAudit is the audit text the fleet must produce once settled,
// judged with the roster.
func expectedAudit(fleet []fleetNode, roster []operand.Operand) string {
	var b strings.Builder
	for _, f := range fleet {
		missing := 0
		for _, o := range roster {
			if f.asks(o) && !f.runs(o) {
				fmt.Fprintf(&b, "%s MISSING %s\n", f.name, o.Name)
				missing++
			}
		}
		if missing == 0 {
			fmt.Fprintf(&b, "%s OK\n", f.name)
		}
	}
	return b.String()
}

// expectedPods counts the operand pods of the settled fleet: Running, and
// Pending for lack of memory.
func expectedPods(fleet []fleetNode) (running, pending int) {
	for _, f := range fleet {
		for _, o := range roster(true) { // a plain fleet asks for no DRA kubelet plugin
			if f.runs(o) {
				running++
			} else if f.role == lowMemory && f.asks(o) {
				pending++
			}
		}
	}
	return running, pending
}

func (f fleetNode) deployLabels() map[string]string {
	labels := map[string]string{}
	for _, o := range operand.Lab {
		if on, ok := f.operands[o.Name]; ok {
			labels[o.LabelKey()] = fmt.Sprint(on)
		}
	}
	return labels
}

func (f fleetNode) object(withDeployLabels, dressed bool) *corev1.Node {
	labels := map[string]string{}
	if f.role != noGPU {
		labels[operand.GPUPresent] = "true"
	}
	if withDeployLabels {
		for k, v := range f.deployLabels() {
			labels[k] = v
		}
	}
	n := testcluster.FakeNode(f.name, labels)
	if dressed {
		fleettest.DressNode(n, f.index)
	}
	f.dressOffer(n)
	registered(n)
	switch f.role {
	case tainted:
		n.Spec.Taints = []corev1.Taint{brokenTaint}
	case lowMemory:
		testcluster.WithMemory(lowMemoryCapacity)(n)
	}
	return n
}

// registered gives a node the conditions its kubelet posts once it has
// registered, so that KWOK need not write them first. A node created without
// a Ready condition has the controller manager's startup grace period (one
// minute) to get one, and at 5,000 nodes KWOK could not keep up: thousands
// were marked unreachable and tainted, then untainted, while the pods came.
func registered(n *corev1.Node) {
	now := metav1.Now()
	for _, c := range []struct {
		t               corev1.NodeConditionType
		status          corev1.ConditionStatus
		reason, message string
	}{
		{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
		{corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", "RouteController created a route"},
	} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c.t, Status: c.status,
			Reason: c.reason, Message: c.message, LastHeartbeatTime: now, LastTransitionTime: now})
	}
}

// createNodes creates the nodes concurrently; nodes that exist are left alone.
func createNodes(ctx context.Context, c kubernetes.Interface, nodes []*corev1.Node) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, n := range nodes {
		g.Go(func() error {
			_, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: "gpuops-bench"})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create node %s: %w", n.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// labSpec is the lab spec that makes `gpuops up` label the given nodes.
func labSpec(namespace string, fleet []fleetNode) ([]byte, error) {
	lab := labspec.Lab{Namespace: namespace}
	for _, f := range fleet {
		n := labspec.Node{Name: f.name}
		if len(f.operands) > 0 {
			n.Operands = f.operands
		}
		lab.Nodes = append(lab.Nodes, n)
	}
	return yaml.Marshal(lab)
}

// waitPods watches the namespace's pods until as many are Running and as
// many Pending unscheduled as the settled fleet has.
func waitPods(ctx context.Context, c kubernetes.Interface, namespace string, running, pending int) error {
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", namespace, fields.Everything())
	// Counted as events come, not by a scan of every pod on every event:
	// that was quadratic, a fifth of a core at 5,000 nodes.
	state := map[types.UID]int{} // each pod's index in counts
	var counts [3]int            // Running, Pending unscheduled, other
	count := func(pod *corev1.Pod, gone bool) {
		if old, ok := state[pod.UID]; ok {
			counts[old]--
			delete(state, pod.UID)
		}
		if gone {
			return
		}
		now := 2
		switch {
		case pod.DeletionTimestamp != nil:
		case pod.Status.Phase == corev1.PodRunning:
			now = 0
		case pod.Status.Phase == corev1.PodPending && unschedulable(pod):
			now = 1
		}
		state[pod.UID] = now
		counts[now]++
	}
	settled := func() (bool, error) {
		return counts[0] == running && counts[1] == pending && counts[2] == 0, nil
	}
	// A loaded 2-core machine schedules ~20 pods a second: 25,000 take 20 minutes.
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{},
		func(s cache.Store) (bool, error) {
			for _, o := range s.List() {
				count(o.(*corev1.Pod), false)
			}
			return settled()
		},
		func(e watch.Event) (bool, error) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				count(pod, e.Type == watch.Deleted)
			}
			return settled()
		})
	if err != nil {
		return fmt.Errorf("waiting for %d Running and %d Pending pods (have %d and %d): %w", running, pending, counts[0], counts[1], err)
	}
	return nil
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	return false
}

// expectedMatrix is the matrix text the fleet must produce once settled,
// judged with the roster.
func expectedMatrix(fleet []fleetNode, roster []operand.Operand) string {
	var b strings.Builder
	running, _ := expectedPods(fleet)
	for _, f := range fleet {
		b.WriteString(f.name)
		for _, o := range roster {
			yes := "no"
			if f.runs(o) {
				yes = "yes"
			}
			fmt.Fprintf(&b, " %s=%s", o.Column, yes)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "TOTAL_PODS=%d\n", running)
	return b.String()
}

// applyDaemonSets creates the namespace and server-side applies the five
// DaemonSets rendered from the embedded bases, as `gpuops up` would, their
// pods dressed as the GPU Operator renders them (fleettest.DressPodSpec)
// unless dressed is false.
func applyDaemonSets(ctx context.Context, c kubernetes.Interface, namespace string, dressed bool) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	manifests, err := render.Operands(gpuops.Kustomize, operand.Lab, namespace)
	if err != nil {
		return err
	}
	force := true
	for _, m := range manifests {
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(m.YAML, &ds); err != nil {
			return fmt.Errorf("DaemonSet %s: %w", m.Operand.DaemonSet, err)
		}
		if dressed {
			fleettest.DressPodSpec(&ds.Spec.Template.Spec, m.Operand.Name)
		}
		dressed, err := yaml.Marshal(&ds)
		if err != nil {
			return err
		}
		_, err = c.AppsV1().DaemonSets(namespace).Patch(ctx, m.Operand.DaemonSet, types.ApplyYAMLPatchType, dressed,
			metav1.PatchOptions{FieldManager: "gpuops-bench", Force: &force})
		if err != nil {
			return fmt.Errorf("apply DaemonSet %s: %w", m.Operand.DaemonSet, err)
		}
	}
	return nil
}

// shape is how big a fleet's objects are as the API server sends them.
type shape struct {
	desc            string
	nodeKB, podKB   float64 // one node, one operand pod (protobuf)
	nodesMB, podsMB float64 // the two lists the floor reads
}

func (s shape) String() string { return s.desc }

// fleetShape says how big the fleet's objects are as the API server sends
// them: one node and one operand pod, and the lists the floor reads
// (protobuf), the ResourceSlices with offers.
func fleetShape(ctx context.Context, c kubernetes.Interface, namespace string, node string, offers bool) (shape, error) {
	size := func(path string) (int, error) {
		b, err := c.CoreV1().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/vnd.kubernetes.protobuf").DoRaw(ctx)
		return len(b), err
	}
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return shape{}, err
	}
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil || len(pods.Items) == 0 {
		return shape{}, fmt.Errorf("the pods of node %s: %d, %v", node, len(pods.Items), err)
	}
	p := pods.Items[0]
	env, mounts := 0, 0
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		env, mounts = env+len(c.Env), mounts+len(c.VolumeMounts)
	}
	var sizes [4]int
	for i, path := range []string{"/api/v1/nodes/" + node, "/api/v1/namespaces/" + namespace + "/pods/" + p.Name,
		"/api/v1/nodes", "/api/v1/namespaces/" + namespace + "/pods"} {
		if sizes[i], err = size(path); err != nil {
			return shape{}, err
		}
	}
	sh := shape{nodeKB: float64(sizes[0]) / 1e3, podKB: float64(sizes[1]) / 1e3, nodesMB: float64(sizes[2]) / 1e6, podsMB: float64(sizes[3]) / 1e6}
	sh.desc = fmt.Sprintf("object sizes: a node has %d labels, %d annotations, %d images, %d conditions, %d addresses, %.1f KB in protobuf; "+
		"an operand pod (%s) has %d init containers, %d containers, %d env vars, %d volumes, %d mounts, %.1f KB; "+
		"the floor's LISTs are %.1f MB of nodes and %.1f MB of pods",
		len(n.Labels), len(n.Annotations), len(n.Status.Images), len(n.Status.Conditions), len(n.Status.Addresses), sh.nodeKB,
		p.Name, len(p.Spec.InitContainers), len(p.Spec.Containers), env, len(p.Spec.Volumes), mounts, sh.podKB,
		sh.nodesMB, sh.podsMB)
	if offers {
		n, err := size("/apis/resource.k8s.io/v1/resourceslices")
		if err != nil {
			return shape{}, err
		}
		sh.desc += fmt.Sprintf(" and %.1f MB of ResourceSlices", float64(n)/1e6)
	}
	return sh, nil
}
