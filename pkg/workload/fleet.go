package workload

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Fleet is the workload side of one cluster, as one read finds it.
type Fleet struct {
	// Pods are the GPU pods (IsGPU) that have not ended, in namespace/name
	// order.
	Pods []Pod
	// Rejected are the pods the kubelet failed at admission for want of a
	// device (UnexpectedAdmissionError), in namespace/name order: the pods
	// the scheduler placed and the kubelet then refused.
	Rejected []Rejected
	// Claims are the ResourceClaims by namespace/name, Classes the device
	// classes by name (true: it picks the DRA driver's GPUs); nil when the
	// cluster does not serve them or the user may not list them (a note
	// then says so).
	Claims  map[string]Claim
	Classes map[string]bool
	// Notes say what the read skipped and why.
	Notes []string
}

// Rejected is a pod the kubelet failed at admission.
type Rejected struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Message   string `json:"message"`
}

// RejectedFrom converts a Failed API pod; false unless the kubelet failed
// it at admission because its device manager could not allocate
// (snapshot.UnexpectedAdmissionError).
func RejectedFrom(p *corev1.Pod) (Rejected, bool) {
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != snapshot.UnexpectedAdmissionError {
		return Rejected{}, false
	}
	return Rejected{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Message: p.Status.Message}, true
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
func (f *Fleet) IsGPU(p *Pod) bool {
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
func (f *Fleet) Keep(read []Pod) {
	f.Pods = slices.DeleteFunc(read, func(p Pod) bool { return !f.IsGPU(&p) })
	slices.SortFunc(f.Pods, func(a, b Pod) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) })
	slices.SortFunc(f.Rejected, func(a, b Rejected) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// RejectedOn counts the pods the kubelet failed at admission, by node.
func (f *Fleet) RejectedOn() map[string]int {
	out := map[string]int{}
	for _, r := range f.Rejected {
		out[r.Node]++
	}
	return out
}
