package snapshot

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// GPUPods is the workload side of one cluster, as one read finds it: its
// GPU pods, the pods the kubelet refused, and the claims and device
// classes that settle which pods are GPU pods.
type GPUPods struct {
	// Pods are the GPU pods (IsGPU) that have not ended, in namespace/name
	// order.
	Pods []GPUPod
	// Rejected are the pods the kubelet failed at admission for want of a
	// device (UnexpectedAdmissionError), in namespace/name order: the pods
	// the scheduler placed and the kubelet then refused.
	Rejected []RejectedPod
	// Claims are the ResourceClaims by namespace/name, Classes the device
	// classes by name (true: it picks the DRA driver's GPUs); nil when the
	// cluster does not serve them or the user may not list them (a note
	// then says so).
	Claims  map[string]Claim
	Classes map[string]bool
	// Notes say what the read skipped and why.
	Notes []string
}

// RejectedPod is a pod the kubelet failed at admission.
type RejectedPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Message   string `json:"message"`
	// At is the pod's start time, which the kubelet sets as it refuses it
	// (zero when it is not set): when it was refused.
	At time.Time `json:"at,omitzero"`
}

// RejectedPodFrom converts a Failed API pod; false unless the kubelet
// failed it at admission because its device manager could not allocate
// (UnexpectedAdmissionError).
func RejectedPodFrom(p *corev1.Pod) (RejectedPod, bool) {
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != UnexpectedAdmissionError {
		return RejectedPod{}, false
	}
	r := RejectedPod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Message: p.Status.Message}
	if p.Status.StartTime != nil {
		r.At = p.Status.StartTime.UTC()
	}
	return r, true
}

// PluginFailed reports whether the kubelet refused the pod because the
// device plugin failed to allocate its devices: its Allocate or
// GetPreferredAllocation call returned a gRPC error, which the kubelet's
// message quotes ("device plugin GetPreferredAllocation rpc failed with
// err: rpc error: code = ...", kubernetes v1.37.2
// pkg/kubelet/cm/devicemanager/manager.go, devicesToAllocate and
// allocateContainerResources; "rpc error: code = %s desc = %s" is
// google.golang.org/grpc/status's). The plugin could not open a device it
// advertises (a GPU lost, NVIDIA/k8s-device-plugin#231). A refusal for want
// of a free device ("requested number of devices unavailable") is not one:
// the node is full, or the scheduler raced the kubelet.
func (r RejectedPod) PluginFailed() bool {
	return strings.Contains(r.Message, "rpc error: code =") && !strings.Contains(r.Message, devicesUnavailable)
}

// IsGPU is the GPU Operator's rule of a GPU pod (NVIDIA/gpu-operator
// v26.7.0 cmd/gpu-operator/main.go, gpuPodSpecFilter, and
// controllers/nodelabeling_controller.go, PodHasNVIDIAGPUClaim): Pending
// or Running, and a container asking a resource prefixed nvidia.com/gpu or
// nvidia.com/mig-, or a claim allocated GPUs by driver gpu.nvidia.com
// (admin access aside); a claim the read could not find counts, as the
// operator counts a claim it could not get. Since that rule skips exactly
// the pods that wait, a claim not yet allocated counts too when it asks a
// device class that picks the driver's GPUs or one that does not exist
// (with the classes read). A claim not made yet (from a template) does
// not: what it will ask is not known.
func (f *GPUPods) IsGPU(p *GPUPod) bool {
	if p.Phase != corev1.PodPending && p.Phase != corev1.PodRunning {
		return false
	}
	if len(p.Requests) > 0 {
		return true
	}
	for _, name := range p.Claims {
		if name == "" {
			continue
		}
		c, ok := f.Claims[p.Namespace+"/"+name]
		switch {
		case !ok:
			return true
		case c.Allocated:
			if len(c.Devices) > 0 {
				return true
			}
		case f.Classes != nil && slices.ContainsFunc(c.Classes, func(class string) bool {
			gpu, exists := f.Classes[class]
			return gpu || !exists
		}):
			return true
		}
	}
	return false
}

// Keep keeps of the pods read those IsGPU, in namespace/name order.
func (f *GPUPods) Keep(read []GPUPod) {
	f.Pods = slices.DeleteFunc(read, func(p GPUPod) bool { return !f.IsGPU(&p) })
	slices.SortFunc(f.Pods, func(a, b GPUPod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	f.UseRejected(f.Rejected)
}

// UseRejected makes r, in namespace/name order, the pods refused at
// admission: those a snapshot read beside f (Snapshot.Rejected), when the
// Failed pods were listed once for both.
func (f *GPUPods) UseRejected(r []RejectedPod) {
	f.Rejected = r
	slices.SortFunc(f.Rejected, func(a, b RejectedPod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// RejectedOn counts the pods the kubelet failed at admission, by node.
func (f *GPUPods) RejectedOn() map[string]int {
	out := map[string]int{}
	for _, r := range f.Rejected {
		out[r.Node]++
	}
	return out
}

// GPUPod is what the workload judges read of a pod that asks for GPUs or
// holds a ResourceClaim: who it is, where it is bound, what it asks and
// where it may go.
type GPUPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner is the pod's controller as kind/name (Job/train, ReplicaSet/web-7d9f);
	// empty for a bare pod.
	Owner   string          `json:"owner,omitempty"`
	Node    string          `json:"node,omitempty"` // spec.nodeName; empty while unscheduled
	Phase   corev1.PodPhase `json:"phase"`
	Created time.Time       `json:"created"`
	// Requests are the device resources the pod asks, as the kubelet
	// admits it (DeviceRequests).
	Requests map[string]int64 `json:"requests,omitempty"`
	// Claims are the pod's ResourceClaims, by the claim object's name: ""
	// for an entry whose claim the resource claim controller has not made
	// yet (from a template).
	Claims []string `json:"claims,omitempty"`
	// What the scheduler reads of the pod to place it.
	NodeSelector map[string]string    `json:"-"`
	Affinity     *corev1.NodeSelector `json:"-"` // required node affinity
	Tolerations  []corev1.Toleration  `json:"-"`
	// Unscheduled is the scheduler's message while PodScheduled is False.
	Unscheduled string `json:"unscheduled,omitempty"`
	// NotStarted is the kubelet's word on the first container that does
	// not start: its waiting reason and message (RunContainerError, …), or
	// its termination's, current or last, when it ended as it started
	// (StartError); empty when none says so.
	NotStarted string `json:"notStarted,omitempty"`
	// Deferred is the kubelet's word on a pod whose admission it defers
	// for want of a device plugin (DeviceNotReady, the pod's status's
	// reason), "reason: message"; empty when none says so.
	Deferred string `json:"deferred,omitempty"`
}

// Key is the pod's namespace/name.
func (p *GPUPod) Key() string { return p.Namespace + "/" + p.Name }

// GPUPodFrom converts an API pod; false when it asks no device resource
// and holds no ResourceClaim, so cannot be a GPU pod whatever its claims
// are.
func GPUPodFrom(p *corev1.Pod) (GPUPod, bool) {
	out := GPUPod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase,
		Created: p.CreationTimestamp.Time, Requests: DeviceRequests(&p.Spec)}
	for _, c := range p.Spec.ResourceClaims {
		name := ""
		switch {
		case c.ResourceClaimName != nil:
			name = *c.ResourceClaimName
		default:
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == c.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		out.Claims = append(out.Claims, name)
	}
	if len(out.Requests) == 0 && len(out.Claims) == 0 {
		return GPUPod{}, false
	}
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			out.Owner = ref.Kind + "/" + ref.Name
		}
	}
	out.NodeSelector, out.Tolerations = p.Spec.NodeSelector, p.Spec.Tolerations
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		out.Affinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			out.Unscheduled = c.Message
		}
	}
	out.NotStarted = notStarted(&p.Status)
	out.Deferred = deferred(&p.Status)
	return out, true
}

// notStarted is the first container's (init containers first) word on
// why it does not start: a termination as the runtime started it
// (StartError), or while it waits its last such termination (a crash loop
// of them), else its waiting reason and message. A container that runs
// says nothing, whatever its last state.
func notStarted(st *corev1.PodStatus) string {
	started := func(t *corev1.ContainerStateTerminated) bool { return t == nil || t.Reason != startError }
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for _, cs := range list {
			switch t, last, w := cs.State.Terminated, cs.LastTerminationState.Terminated, cs.State.Waiting; {
			case !started(t):
				return t.Reason + ": " + t.Message
			case w != nil && !started(last):
				return last.Reason + ": " + last.Message
			case w != nil && w.Message != "":
				return w.Reason + ": " + w.Message
			}
		}
	}
	return ""
}

// deferred is the kubelet's DeviceNotReady on the pod's status, "reason:
// message"; empty when none.
func deferred(st *corev1.PodStatus) string {
	if st.Reason == DeviceNotReady {
		return st.Reason + ": " + st.Message
	}
	return ""
}

// startError is the kubelet's reason for a container that ended as the
// runtime started it (a hook of the runtime failed).
const startError = "StartError"

// Claim is what the workload judges read of a ResourceClaim: the device
// classes it asks and, once allocated, the devices of driver gpu.nvidia.com
// it holds, admin access excluded (a management view of a device, not the
// device: NVIDIA/gpu-operator v26.7.0 controllers/nodelabeling_controller.go,
// PodHasNVIDIAGPUClaim).
type Claim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Allocated bool   `json:"allocated"`
	// Devices are the allocated GPU devices, as pool/device.
	Devices []string `json:"devices,omitempty"`
	// Classes are the device classes its requests name.
	Classes []string `json:"classes,omitempty"`
	// Asks is how many devices its requests ask: an exact count's count, a
	// request for all of a class's devices on the node 1 (at least one), of
	// a request with alternatives (firstAvailable) the first's.
	Asks int64 `json:"asks,omitempty"`
}

// ClaimFrom converts an API ResourceClaim.
func ClaimFrom(c *resourcev1.ResourceClaim) Claim {
	out := Claim{Namespace: c.Namespace, Name: c.Name}
	count := func(mode resourcev1.DeviceAllocationMode, n int64) int64 {
		if mode == resourcev1.DeviceAllocationModeAll || n < 1 {
			return 1
		}
		return n
	}
	for _, r := range c.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			out.Classes = append(out.Classes, r.Exactly.DeviceClassName)
			out.Asks += count(r.Exactly.AllocationMode, r.Exactly.Count)
		default:
			for i, s := range r.FirstAvailable {
				out.Classes = append(out.Classes, s.DeviceClassName)
				if i == 0 {
					out.Asks += count(s.AllocationMode, s.Count)
				}
			}
		}
	}
	slices.Sort(out.Classes)
	out.Classes = slices.Compact(out.Classes)
	if a := c.Status.Allocation; a != nil {
		out.Allocated = true
		for _, r := range a.Devices.Results {
			if r.Driver == DRADriverName && (r.AdminAccess == nil || !*r.AdminAccess) {
				out.Devices = append(out.Devices, r.Pool+"/"+r.Device)
			}
		}
	}
	return out
}

// Key is the claim's namespace/name.
func (c *Claim) Key() string { return c.Namespace + "/" + c.Name }

// ClaimedByPool counts the GPU devices in the claims' allocations (prepared
// or not), by DRA pool.
func (f *GPUPods) ClaimedByPool() map[string]int64 {
	out := map[string]int64{}
	for _, c := range f.Claims {
		for _, d := range c.Devices {
			pool, _, _ := strings.Cut(d, "/")
			out[pool]++
		}
	}
	return out
}

// GPUClasses are the device classes read that pick the DRA driver's GPUs,
// by name.
func (f *GPUPods) GPUClasses() []string {
	var out []string
	for name, gpu := range f.Classes {
		if gpu {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// gpuSelector is a device class's CEL selector that picks the DRA driver's
// devices, as the operator's own classes write it (device.driver ==
// 'gpu.nvidia.com' && ..., NVIDIA/gpu-operator v26.7.0
// internal/state/testdata/golden/gpucluster-dra-driver-gpus-only.yaml).
var gpuSelector = regexp.MustCompile(`device\.driver\s*==\s*['"]` + regexp.QuoteMeta(DRADriverName) + `['"]`)

// GPUClass reports whether a DeviceClass picks the DRA driver's GPUs.
func GPUClass(c *resourcev1.DeviceClass) bool {
	return slices.ContainsFunc(c.Spec.Selectors, func(s resourcev1.DeviceSelector) bool {
		return s.CEL != nil && gpuSelector.MatchString(s.CEL.Expression)
	})
}

// NonGPUPod is a pod that is no GPU pod, and why not: it asks no GPU, or
// it ended.
type NonGPUPod struct {
	Pod string `json:"pod"` // namespace/name
	Why string `json:"why"`
}
