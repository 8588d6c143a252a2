// Package snapshot is the model of the cluster state that every judgement
// is made from, as one read of the cluster fills it: the nodes; the pods,
// DaemonSets and their latest revisions of the operator's namespace; the
// ClusterPolicy, NVIDIADrivers and the operator's version (operator.go);
// the driver upgrade controller's Events; the sharing and MIG configs the
// policy names (sharing.go); the DRA driver's devices (dra.go); the
// kubelet's Warnings on the operand pods and the holders of a refused
// node's devices (kubelet.go); what the reader could not read (Notes); and
// the workload's side, the GPU pods of every namespace (gpupods.go: which
// pods are GPU pods, by the operator's own rule). The types are compact on
// purpose: they keep only what a judge reads, so a snapshot of thousands of
// nodes stays small. It imports API types only, never a client:
// pkg/snapshot/read fills it from the cluster.
package snapshot

import (
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuops/gpuops/pkg/daemonset"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
)

// Snapshot is the cluster state at one moment.
type Snapshot struct {
	Namespace  string
	Nodes      []Node
	Pods       []Pod
	DaemonSets []DaemonSet
	// Policy is the GPU Operator's ClusterPolicy, when there is one and it
	// was read; NVIDIADrivers are its NVIDIADriver objects (nil when they
	// were not read, empty when there are none).
	Policy        *ClusterPolicy
	NVIDIADrivers []NVIDIADriver
	// OperatorVersion is the GPU Operator's image tag, as its Deployment
	// runs it (or as the ClusterPolicy's chart labels name it); empty when
	// neither was found. The judges judge by the release it names
	// (operand.ReleaseOf).
	OperatorVersion string
	// CRDFields are, read only when OperatorVersion is empty, the fields
	// of those that mark a release (operand.Release.SchemaFields) which the
	// served ClusterPolicy CRD has: the judges then judge by the oldest
	// release that has them (Release). Nil when not read.
	CRDFields []string
	// Revisions are, by DaemonSet name, the controller-revision-hash of the
	// DaemonSet's latest ControllerRevision: its pods with another hash run
	// an older template. Nil unless the read was for upgrades.
	Revisions map[string]string
	// UpgradeEvents are, by node, the driver upgrade controller's latest
	// Event on it (operand.UpgradeEventReason): its latest warning, when it
	// gave one, else its latest word. Nil unless the read was for upgrades.
	UpgradeEvents map[string]Event
	// Offers are the sharing and MIG configs the ClusterPolicy names
	// (sharing.go); nil unless the read was for health.
	Offers *Offers
	// DevicePools are, by node, the pools of devices the DRA kubelet plugin
	// publishes there (dra.go). Nil unless the read listed ResourceSlices.
	DevicePools map[string][]DevicePool
	// Warnings are, by pod name, the Warning Events on the operand pods
	// (the namespace's DaemonSet pods and the validator's workload pods),
	// kept by KeepWarning; Holders are, by node, the devices the pods on
	// each of RefusedNodes hold (kubelet.go). Nil unless the read was for
	// health.
	Warnings map[string][]Warning
	Holders  map[string]Holders
	// Rejected are the pods of every namespace the kubelet refused at
	// admission (UnexpectedAdmissionError), as the workload side reads
	// them (GPUPods.Rejected): a workload refused because the device
	// plugin failed is its node's fault (RejectedPod.PluginFailed). Nil
	// unless the read was for health (or the user may not list them).
	Rejected []RejectedPod
	// Logged are, by pod name, the hints the logs of its failing
	// containers named (health --logs, pkg/signature), for the judges to
	// weigh as they weigh a termination message: read after a first
	// verdict, since only a failing container's log is read. Nil unless
	// read.
	Logged map[string][]signature.Hint
	// Notes say what the reader skipped and why (a CRD that is not served,
	// a list the user may not make), for --explain.
	Notes []string
}

// Node is what a judge needs of a node.
type Node struct {
	Name          string
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool
	Ready         bool
	// LabelChanges says who last wrote some of the labels, and when: only
	// those the reader was asked to trace (a helper's pause), nil otherwise.
	LabelChanges map[string]LabelChange
	// Annotations are the marks of those who take a node out of service
	// (operand.IsOutOfServiceAnnotation: the driver upgrade controller's,
	// the driver manager's, NVSentinel's, kured's, gpuops's quarantine),
	// nil when it has none: the others are left out, they can outweigh the
	// rest of the node.
	Annotations map[string]string
	// Cordon says who last set spec.unschedulable, and when: only on a
	// cordoned node whose whole object was read, nil otherwise.
	Cordon *LabelChange
	// Tainter says who last wrote spec.taints (an atomic list: its last
	// writer owns every taint), and when: only on a node with taints
	// whose whole object was read, nil otherwise.
	Tainter *LabelChange
	// Devices are the NVIDIA device counts of status.capacity and
	// .allocatable, by resource name (IsDeviceResource): nvidia.com/gpu,
	// shared GPUs renamed (nvidia.com/gpu.shared) and the MIG resources
	// nvidia.com/mig-<profile> of the mixed strategy. Nil when the node
	// advertises none (or its status was not read).
	Devices map[string]DeviceCount
}

// GPUResource is the extended resource the device plugin advertises a node's
// GPUs as (MIG devices too, under the single strategy).
const GPUResource = "nvidia.com/gpu"

// MIGResourcePrefix starts the resource names of MIG devices under the mixed
// strategy, e.g. nvidia.com/mig-1g.10gb.
const MIGResourcePrefix = "nvidia.com/mig-"

// IsDeviceResource reports whether a node resource is one of the GPU
// devices NodeFrom counts (and the reader keeps, read/trim.go): any name
// the operator's validator counts, those prefixed nvidia.com/gpu or
// nvidia.com/mig- (NVIDIA/gpu-operator v26.7.0,
// cmd/nvidia-validator/main.go, countGPUResources). So whole GPUs, MIG
// devices, and GPUs the device plugin shares under another name
// (nvidia.com/gpu.shared when its config renames them) alike.
func IsDeviceResource(name string) bool {
	return strings.HasPrefix(name, GPUResource) || strings.HasPrefix(name, MIGResourcePrefix)
}

// DeviceCount is how many devices of one resource a node has and how many of
// them the kubelet can hand out: the device plugin reports unhealthy ones in
// capacity, not in allocatable.
type DeviceCount struct{ Capacity, Allocatable int64 }

// Pod is what a judge needs of a pod.
type Pod struct {
	Name      string
	Node      string // spec.nodeName; empty while the pod is not scheduled
	DaemonSet string // name of the DaemonSet that controls the pod; empty if none does
	Phase     corev1.PodPhase
	Deleting  bool // deletionTimestamp is set
	// Reason says why a pod is not running, in the API's words: the
	// scheduler's message while unscheduled, else the pod's status reason
	// (e.g. Evicted) or a waiting container's (e.g. ImagePullBackOff).
	Reason string
	// StatusReason is the pod's own status.reason, the kubelet's word for
	// a pod it refused or evicted (UnexpectedAdmissionError, Evicted):
	// what RefusedDevice reads; Reason says it with its message.
	StatusReason string
	// Target is the node a DaemonSet pod not yet bound was made for (the
	// DaemonSet controller pins it with a metadata.name node affinity);
	// empty for other pods, and once bound (Node says where it is: the read
	// does not decode the affinity of a bound pod).
	Target string
	// Revision is a DaemonSet pod's controller-revision-hash label: the
	// template it was made from. Only an upgrades read keeps it.
	Revision string
	Health   PodHealth
}

// Event is what a judge needs of an Event: its type (Normal or Warning),
// message and when it last happened.
type Event struct {
	Type    string
	Message string
	Time    time.Time
}

// PodHealth is what a health judge needs of a pod's containers, without the
// API's structs: the Ready condition, the container in the worst state and,
// while the pod initialises, the init container it is in.
type PodHealth struct {
	Ready      bool      // the Ready condition is True
	ReadySince time.Time // the Ready condition's lastTransitionTime
	Started    time.Time // status.startTime: when the kubelet took the pod
	// Container is the container (init or not) in the worst state, empty when
	// none is in a bad one: waiting for a reason other than starting up
	// (CrashLoopBackOff, ImagePullBackOff, CreateContainerConfigError, ...),
	// terminated with a failure (Error, OOMKilled), or not ready after a
	// restart. State is that reason; LastState the reason of its last
	// termination; Restarts its restart count.
	Container string
	State     string
	LastState string
	Restarts  int32
	// Message is that container's termination message
	// (terminationMessagePath, else its log's tail with
	// FallbackToLogsOnError): its current termination's, else its last.
	Message string
	// Init is the init container the pod is in while it initialises (the
	// first one not yet done), InitDone how many are done of InitTotal (as
	// kubectl shows Init:1/4), and InitSince when the current one started
	// (its running startedAt, else the pod's start time).
	Init      string
	InitDone  int
	InitTotal int
	InitSince time.Time
}

// Placement is the node the pod is on or, for a daemon pod not yet bound,
// the node it was made for.
func (p Pod) Placement() string {
	if p.Node != "" {
		return p.Node
	}
	return p.Target
}

// Present reports whether the pod counts as running its operand: phase
// Running and not on its way out.
func (p Pod) Present() bool { return p.Phase == corev1.PodRunning && !p.Deleting }

// DaemonSet is what a judge needs of a DaemonSet.
type DaemonSet struct {
	Name                   string
	Labels                 map[string]string
	Controller             string // the controlling owner as Kind.group (ClusterPolicy.nvidia.com); empty if none
	NodeSelector           map[string]string
	Affinity               *corev1.Affinity
	Tolerations            []corev1.Toleration
	HostNetwork            bool // its pods also tolerate network-unavailable nodes
	DesiredNumberScheduled int32
}

// Admission is how the DaemonSet's pods are placed on nodes.
func (d DaemonSet) Admission() daemonset.Admission { return daemonset.NewAdmission(d.placement()) }

// SelectorLabels are the node label keys the DaemonSet selects nodes on.
func (d DaemonSet) SelectorLabels() []string { return daemonset.SelectorLabels(d.placement()) }

func (d DaemonSet) placement() corev1.PodSpec {
	return corev1.PodSpec{NodeSelector: d.NodeSelector, Affinity: d.Affinity, Tolerations: d.Tolerations, HostNetwork: d.HostNetwork}
}

// API rebuilds the API node's placement fields (name, labels, taints), for
// the admission helpers that take one.
func (n Node) API() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}, Spec: corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable}}
}

// NodeFrom converts an API node.
func NodeFrom(n *corev1.Node) Node {
	out := Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable}
	for k, v := range n.Annotations {
		if operand.IsOutOfServiceAnnotation(k) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	count := func(list corev1.ResourceList, set func(*DeviceCount, int64)) {
		for name, q := range list {
			if !IsDeviceResource(string(name)) {
				continue
			}
			if out.Devices == nil {
				out.Devices = make(map[string]DeviceCount, 1)
			}
			c := out.Devices[string(name)]
			set(&c, q.Value())
			out.Devices[string(name)] = c
		}
	}
	count(n.Status.Capacity, func(c *DeviceCount, v int64) { c.Capacity = v })
	count(n.Status.Allocatable, func(c *DeviceCount, v int64) { c.Allocatable = v })
	return out
}

// NodeConditionRead and PodConditionRead report whether NodeFrom and
// PodFrom read a condition of this type: a read may leave the others (a
// node's pressure conditions, a pod's ContainersReady and
// PodReadyToStartContainers) undecoded.
func NodeConditionRead(t string) bool { return t == string(corev1.NodeReady) }

func PodConditionRead(t string) bool {
	switch corev1.PodConditionType(t) {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized:
		return true
	}
	return false
}

// PodFrom converts an API pod.
func PodFrom(p *corev1.Pod) Pod {
	out := Pod{Name: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase, Deleting: p.DeletionTimestamp != nil,
		DaemonSet: daemonset.Controller(p), StatusReason: p.Status.Reason}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			out.Reason = c.Message
		}
	}
	if out.DaemonSet != "" {
		if out.Node == "" {
			out.Target = daemonset.TargetNode(p)
		}
		out.Revision = p.Labels[operand.RevisionHashLabel]
	}
	if out.Reason == "" && out.Phase != corev1.PodRunning {
		out.Reason = statusReason(&p.Status)
	}
	out.Health = podHealth(&p.Status)
	return out
}

// podHealth reads the pod's Ready condition, its worst container and the
// init container it is in.
func podHealth(st *corev1.PodStatus) PodHealth {
	var h PodHealth
	if st.StartTime != nil {
		h.Started = st.StartTime.Time
	}
	initialized := false
	for _, c := range st.Conditions {
		switch c.Type {
		case corev1.PodReady:
			h.Ready, h.ReadySince = c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		case corev1.PodInitialized:
			initialized = c.Status == corev1.ConditionTrue
		}
	}
	worst := 0
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			if sev := severity(cs); sev > worst || sev == worst && sev > 0 && cs.RestartCount > h.Restarts {
				worst = sev
				h.Container, h.State, h.Restarts = cs.Name, stateReason(cs.State), cs.RestartCount
				h.LastState, h.Message = "", ""
				if t := cs.State.Terminated; t != nil {
					h.Message = t.Message
				}
				if t := cs.LastTerminationState.Terminated; t != nil {
					h.LastState = terminatedReason(t)
					if h.Message == "" {
						h.Message = t.Message
					}
				}
			}
		}
	}
	if initialized {
		return h
	}
	h.InitTotal = len(st.InitContainerStatuses)
	for _, cs := range st.InitContainerStatuses {
		// A regular init container is ready once it completed; a sidecar
		// (restartPolicy Always) once it runs and passes its probe.
		if cs.Ready || cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			h.InitDone++
			continue
		}
		h.Init, h.InitSince = cs.Name, h.Started
		if r := cs.State.Running; r != nil {
			h.InitSince = r.StartedAt.Time
		}
		break
	}
	return h
}

// severity ranks how badly a container is doing: 0 fine or starting up, 1
// running but not ready after a restart, 2 terminated with a failure, 3
// waiting for a reason other than starting up, 4 in a crash loop.
func severity(cs *corev1.ContainerStatus) int {
	switch st := cs.State; {
	case st.Waiting != nil && st.Waiting.Reason == "CrashLoopBackOff":
		return 4
	case st.Waiting != nil && st.Waiting.Reason != "" && st.Waiting.Reason != "ContainerCreating" && st.Waiting.Reason != "PodInitializing":
		return 3
	case st.Terminated != nil && st.Terminated.ExitCode != 0:
		return 2
	case st.Running != nil && !cs.Ready && cs.RestartCount > 0:
		return 1
	}
	return 0
}

// stateReason names a container's current state: the waiting or terminated
// reason, or Running.
func stateReason(st corev1.ContainerState) string {
	switch {
	case st.Waiting != nil:
		return st.Waiting.Reason
	case st.Terminated != nil:
		return terminatedReason(st.Terminated)
	case st.Running != nil:
		return "Running"
	}
	return ""
}

// terminatedReason is the kubelet's reason for a termination (Error,
// OOMKilled, Completed), or its exit code when it gives none.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	if t.Reason != "" {
		return t.Reason
	}
	return "exit code " + strconv.Itoa(int(t.ExitCode))
}

// statusReason is the pod's own reason (Evicted, NodeLost, ...) or else the
// first waiting container's (ImagePullBackOff, CrashLoopBackOff, ...).
func statusReason(st *corev1.PodStatus) string {
	join := func(reason, msg string) string {
		if msg == "" {
			return reason
		}
		return reason + ": " + msg
	}
	if st.Reason != "" || st.Message != "" {
		return join(st.Reason, st.Message)
	}
	for _, cs := range append(st.InitContainerStatuses[:len(st.InitContainerStatuses):len(st.InitContainerStatuses)], st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return join(w.Reason, w.Message)
		}
	}
	return ""
}

// DaemonSetFrom converts an API DaemonSet.
func DaemonSetFrom(d *appsv1.DaemonSet) DaemonSet {
	out := DaemonSet{
		Name:                   d.Name,
		Labels:                 d.Labels,
		NodeSelector:           d.Spec.Template.Spec.NodeSelector,
		Affinity:               d.Spec.Template.Spec.Affinity,
		Tolerations:            d.Spec.Template.Spec.Tolerations,
		HostNetwork:            d.Spec.Template.Spec.HostNetwork,
		DesiredNumberScheduled: d.Status.DesiredNumberScheduled,
	}
	if ref := metav1.GetControllerOf(d); ref != nil {
		out.Controller = ref.Kind + "." + schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).Group
	}
	return out
}

// EventFrom converts an API Event. Its time is the latest the Event records:
// the series' last observation, else lastTimestamp, else eventTime (the
// events.k8s.io writers set only that), else firstTimestamp.
func EventFrom(e *corev1.Event) Event {
	out := Event{Type: e.Type, Message: e.Message}
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		out.Time = e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		out.Time = e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		out.Time = e.EventTime.Time
	default:
		out.Time = e.FirstTimestamp.Time
	}
	out.Time = out.Time.UTC()
	return out
}

// Supersedes reports whether e says more than old about a node's upgrade: a
// warning over a normal Event (the controller's success message on entering
// upgrade-failed comes after the warning that says why), else the later one.
func (e Event) Supersedes(old Event) bool {
	if w, wasW := e.Type == corev1.EventTypeWarning, old.Type == corev1.EventTypeWarning; w != wasW {
		return w
	}
	return e.Time.After(old.Time)
}

// KeepEvent keeps e in byNode as node's Event unless the one there
// supersedes it.
func KeepEvent(byNode map[string]Event, node string, e Event) {
	if prev, ok := byNode[node]; !ok || e.Supersedes(prev) {
		byNode[node] = e
	}
}

// Revision is what the upgrade verdict needs of a DaemonSet's
// ControllerRevision.
type Revision struct {
	DaemonSet string
	Number    int64
	Hash      string // its pods' controller-revision-hash
}

// RevisionFrom reads a ControllerRevision; false when no DaemonSet owns
// it. The hash is its controller-revision-hash label, else its name past
// "<ds>-", as the upgrade controller finds it
// (GetDaemonsetControllerRevisionHash).
func RevisionFrom(r *appsv1.ControllerRevision) (Revision, bool) {
	ref := metav1.GetControllerOf(r)
	if ref == nil || ref.Kind != "DaemonSet" {
		return Revision{}, false
	}
	hash, ok := r.Labels[operand.RevisionHashLabel]
	if !ok {
		hash = strings.TrimPrefix(r.Name, ref.Name+"-")
	}
	return Revision{DaemonSet: ref.Name, Number: r.Revision, Hash: hash}, true
}

// LatestRevisions maps each DaemonSet to the hash of its highest-numbered
// revision: its current template (Snapshot.Revisions).
func LatestRevisions(rs []Revision) map[string]string {
	latest := map[string]Revision{}
	for _, r := range rs {
		if prev, ok := latest[r.DaemonSet]; !ok || r.Number > prev.Number {
			latest[r.DaemonSet] = r
		}
	}
	out := make(map[string]string, len(latest))
	for ds, r := range latest {
		out[ds] = r.Hash
	}
	return out
}

// Release is the GPU Operator release the judges judge by, and the note
// that says how it was found where it is not the release the operator's
// image tag names: from the tag (operand.ReleaseOf), else from the served
// CRD's schema (operand.ReleaseOfSchema); the newest, silently, when
// neither was read.
func (s *Snapshot) Release() (operand.Release, string) {
	if s.OperatorVersion == "" && s.CRDFields != nil {
		return operand.ReleaseOfSchema(func(f string) bool { return slices.Contains(s.CRDFields, f) })
	}
	return operand.ReleaseOf(s.OperatorVersion)
}
