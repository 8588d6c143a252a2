package incidents_test

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// hack/kwokctl.yaml's as-written stage holds a pod whose state
// (testcluster.PodState) is asWritten in exactly the status podStatus
// holds.
const (
	podStatus = "gpuops.test/pod-status"
	asWritten = "as-written"
)

// mainContainer names each operand's main container as upstream does
// (NVIDIA/gpu-operator assets/state-*/…daemonset.yaml): what a thread's
// describe output shows.
var mainContainer = map[string]string{
	operand.Driver:              "nvidia-driver-ctr",
	operand.ContainerToolkit:    "nvidia-container-toolkit-ctr",
	operand.OperatorValidator:   "nvidia-operator-validator",
	operand.DevicePlugin:        "nvidia-device-plugin",
	operand.GPUFeatureDiscovery: "gpu-feature-discovery",
	operand.DCGMExporter:        "nvidia-dcgm-exporter",
	operand.DCGM:                "nvidia-dcgm-ctr",
	operand.MIGManager:          "nvidia-mig-manager",
}

// built is an incident rebuilt in its own namespace and on its own node:
// the namespace plays the operator's.
type built struct {
	in      incident
	env     *testcluster.Env
	node    string
	created time.Time // when the node and its labels were written
}

// since is when every state of the rebuilt pods began: an hour before the
// test, so that nothing reads as just started.
var since = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))

// build creates the incident's node, its operands' DaemonSets (as the
// operator names and labels them, selecting the node by its deploy
// labels) and the other pods on it.
func build(t *testing.T, in incident) built {
	t.Helper()
	env := testcluster.New(t)
	b := built{in: in, env: env, node: env.NodeName("node")}
	ctx := context.Background()

	labels := map[string]string{operand.GPUPresent: "true"}
	for _, o := range in.Node.Stack {
		labels[operand.LabelPrefix+o] = "true"
	}
	for k, v := range in.Node.Labels {
		labels[k] = v
	}
	var opts []testcluster.NodeOption
	if g := in.Node.GPUs; g != nil {
		opts = append(opts, func(n *corev1.Node) {
			n.Status.Capacity[snapshot.GPUResource] = *resource.NewQuantity(g.Capacity, resource.DecimalSI)
			n.Status.Allocatable[snapshot.GPUResource] = *resource.NewQuantity(g.Allocatable, resource.DecimalSI)
		})
	}
	b.created = time.Now()
	env.AddNode(t, b.node, labels, opts...)

	for _, o := range in.rendered() {
		ds := daemonSet(env, o, in.Pods[o.Name], in.release())
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if in.Operator != "" {
		if _, err := env.Client.AppsV1().Deployments(env.Namespace).Create(ctx, operatorDeployment(in.Operator), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range in.Others {
		if p.Rejected {
			continue // refuse makes them, once the operands run
		}
		if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, otherPod(b.node, p), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// refuse makes the pods the kubelet refused at admission, once the
// operands' pods hold their state: as in the threads, the kubelet refuses
// them on a node whose device plugin has served a while, not before it
// was Ready (a refusal from before is stale, pkg/health's admission).
func (b built) refuse(t *testing.T) {
	t.Helper()
	for _, p := range b.in.Others {
		if !p.Rejected {
			continue
		}
		if _, err := b.env.Client.CoreV1().Pods(b.env.Namespace).Create(context.Background(), otherPod(b.node, p), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// operatorDeployment is the GPU Operator's Deployment at release version,
// labelled and named as its chart makes it (NVIDIA/gpu-operator
// deployments/gpu-operator/templates/operator.yaml), where gpuops reads the
// version. No replica: its pod would only crowd the incident's node.
func operatorDeployment(version string) *appsv1.Deployment {
	labels := map[string]string{"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}
	var none int32
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-operator", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &none,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gpu-operator", Image: "nvcr.io/nvidia/gpu-operator:" + version}}},
			},
		},
	}
}

// rendered are the operands whose DaemonSets the operator renders for the
// incident: those the node asks for, and those its labels name otherwise
// (paused by a helper, say), whose pods do not run on it.
func (in incident) rendered() []operand.Operand {
	var out []operand.Operand
	for _, o := range operand.Real {
		if _, labelled := in.Node.Labels[o.LabelKey()]; labelled || slices.Contains(in.Node.Stack, o.Name) {
			out = append(out, o)
		}
	}
	return out
}

// daemonSet is the operand's DaemonSet, its pods held in the state p
// describes (a Ready pod when p is empty), running the init containers of
// release r.
func daemonSet(env *testcluster.Env, o operand.Operand, p pod, r operand.Release) *appsv1.DaemonSet {
	ds := testcluster.DaemonSet(env.Namespace, cmp.Or(p.DaemonSet, o.DaemonSet), map[string]string{
		o.LabelKey(): "true", testcluster.LabelTestID: env.ID,
	}, "16Mi")
	ds.Labels = map[string]string{operand.ManagedByLabel: "gpu-operator"}
	spec := &ds.Spec.Template.Spec
	spec.Containers[0].Name = cmp.Or(p.Container, mainContainer[o.Name], "main")
	for _, i := range r.InitsOf(o.Name) {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: i.Container, Image: "registry.example/fake:1"})
	}
	ds.Spec.Template.Annotations = asWrittenAnnotations(spec, p)
	return ds
}

// asWrittenAnnotations hold a pod of spec in the state p describes (nil:
// Ready, which KWOK's own stages make it).
func asWrittenAnnotations(spec *corev1.PodSpec, p pod) map[string]string {
	if p.Init == "" && p.State.running() && p.Reason == "" {
		return nil
	}
	status, err := json.Marshal(podStatusOf(spec, p))
	if err != nil {
		panic(err)
	}
	return map[string]string{testcluster.PodState: asWritten, podStatus: string(status)}
}

// podStatusOf is the status of a pod of spec in the state p describes.
func podStatusOf(spec *corev1.PodSpec, p pod) corev1.PodStatus {
	held := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == p.Init })
	if p.Init == "" {
		held = len(spec.InitContainers)
	}
	initializing := state{Waiting: "PodInitializing"}
	st := corev1.PodStatus{Reason: p.Reason, Message: p.Message, StartTime: &since}
	for i, c := range spec.InitContainers {
		s := state{Terminated: "Completed"}
		switch {
		case i == held:
			s = p.State
		case i > held:
			s = initializing
		}
		cs := containerStatus(c, s)
		cs.Ready = s.Terminated == "Completed" // an init container is ready once it completed
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	main := p.State
	if held < len(spec.InitContainers) {
		main = initializing
	}
	st.ContainerStatuses = []corev1.ContainerStatus{containerStatus(spec.Containers[0], main)}

	initialized, ready := held == len(spec.InitContainers), main.running()
	// Pending while in an init container or before any container ran,
	// Running after.
	st.Phase = corev1.PodPending
	if initialized && (main.running() || main.Restarts > 0 || main.Terminated != "") {
		st.Phase = corev1.PodRunning
	}
	st.Conditions = []corev1.PodCondition{
		condition(corev1.PodScheduled, true),
		condition(corev1.PodInitialized, initialized),
		condition(corev1.ContainersReady, ready),
		condition(corev1.PodReady, ready),
	}
	return st
}

func condition(t corev1.PodConditionType, ok bool) corev1.PodCondition {
	c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: since}
	if !ok {
		c.Status = corev1.ConditionFalse
	}
	return c
}

// containerStatus is what the kubelet reports of container c in state s.
func containerStatus(c corev1.Container, s state) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: s.Restarts, Ready: s.running()}
	switch {
	case s.Waiting != "":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: s.Waiting, Message: s.Message}
	case s.Terminated != "":
		cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: s.Terminated, ExitCode: s.ExitCode,
			Message: s.Message, StartedAt: since, FinishedAt: since}
	default:
		started := true
		cs.Started = &started
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: since}
	}
	if s.Last != "" {
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: s.Last,
			ExitCode: s.LastExitCode, StartedAt: since, FinishedAt: since}
	}
	return cs
}

// otherPod is a pod no operand controls, bound to node, in the state p
// describes; one the kubelet refused as it was made.
func otherPod(node string, p other) *corev1.Pod {
	c := corev1.Container{Name: cmp.Or(p.Container, "main"), Image: "registry.example/fake:1"}
	if p.GPUs > 0 {
		c.Resources = testcluster.GPUs(p.GPUs)
	}
	spec := corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c}, RestartPolicy: corev1.RestartPolicyNever}
	if p.Rejected {
		out := testcluster.Rejected("", node, p.Reason, p.Message, time.Time{}, spec)
		out.Name = p.Name
		return out
	}
	for _, name := range p.Inits {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: name, Image: c.Image})
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Annotations: asWrittenAnnotations(&spec, p.pod)}, Spec: spec}
}

// settled reports whether every pod of the incident shows the status its
// description gives, as the snapshot reads it; refused: the pods the
// kubelet refused are made already (refuse).
func (b built) settled(refused bool) func(pods []corev1.Pod) bool {
	return func(pods []corev1.Pod) bool { return b.holds(pods, refused) }
}

func (b built) holds(pods []corev1.Pod, refused bool) bool {
	want := len(b.in.Node.Stack)
	for _, o := range b.in.Others {
		if refused || !o.Rejected {
			want++
		}
	}
	if len(pods) != want {
		return false
	}
	for i := range pods {
		p := &pods[i]
		switch raw, ok := p.Annotations[podStatus]; {
		case ok:
			var st corev1.PodStatus
			if json.Unmarshal([]byte(raw), &st) != nil || p.Status.Phase != st.Phase ||
				len(p.Status.ContainerStatuses) != len(st.ContainerStatuses) || len(p.Status.InitContainerStatuses) != len(st.InitContainerStatuses) {
				return false
			}
		case p.Annotations[testcluster.PodState] != "": // refused at admission, for any reason
			if p.Status.Phase != corev1.PodFailed || p.Status.Reason != p.Annotations[testcluster.RejectReason] {
				return false
			}
		case p.Status.Phase != corev1.PodRunning || !snapshot.PodFrom(p).Health.Ready:
			return false
		}
	}
	return true
}

// descOf is the description of a pod of the incident: an operand's (by its
// DaemonSet) or another's (by its name); false for none.
func (b built) descOf(p *corev1.Pod) (desc pod, container string, ok bool) {
	if ds := snapshot.PodFrom(p).DaemonSet; ds != "" {
		for name, d := range b.in.Pods {
			if o, err := operand.Lookup(operand.Real, name); err == nil && cmp.Or(d.DaemonSet, o.DaemonSet) == ds {
				return d, cmp.Or(d.Container, mainContainer[name], "main"), true
			}
		}
		return pod{}, "", false
	}
	for _, o := range b.in.Others {
		if o.Name == p.Name {
			return o.pod, cmp.Or(o.Container, "main"), true
		}
	}
	return pod{}, "", false
}

// events records the incident's events on its pods, once they exist, as
// the kubelet does.
func (b built) events(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	for i := range pods {
		p := &pods[i]
		desc, _, _ := b.descOf(p)
		for _, e := range desc.Events {
			ev := &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name,
					UID: p.UID},
				Type: corev1.EventTypeWarning, Reason: e.Reason, Message: e.Message,
				Count: max(e.Count, 1), FirstTimestamp: since, LastTimestamp: metav1.Now(),
				Source: corev1.EventSource{Component: "kubelet", Host: b.node},
			}
			if _, err := b.env.Client.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// logs has KWOK serve the log tail each pod's description pasted, as the
// container that failed wrote it: the init container the pod is held in,
// else its main one; the instance before for one that restarted.
func (b built) logs(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	var logs []testcluster.ContainerLog
	for i := range pods {
		desc, container, _ := b.descOf(&pods[i])
		if desc.Log == "" {
			continue
		}
		l := testcluster.ContainerLog{Pod: &pods[i], Container: cmp.Or(desc.Init, container), Current: desc.Log}
		if desc.State.Restarts > 0 {
			l.Current, l.Previous = "", desc.Log
		}
		logs = append(logs, l)
	}
	b.env.ServeLogs(t, logs)
}
