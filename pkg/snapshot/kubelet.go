package snapshot

import (
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// What the kubelet already reports of a failing pod, besides its states:
// the Warning Events it records on the pod (a sandbox it could not create,
// a pod it refused at admission) and the devices other pods hold on a node
// where the operator validator's workload pod was refused one.

// Warning is a Warning Event on a pod, as `kubectl describe pod` lists it.
type Warning struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count,omitempty"`
	Time    time.Time `json:"time"`
}

// WarningFrom converts an API Event (its time as EventFrom finds it).
func WarningFrom(e *corev1.Event) Warning {
	count := e.Count
	if e.Series != nil && e.Series.Count > count {
		count = e.Series.Count
	}
	return Warning{Reason: e.Reason, Message: e.Message, Count: count, Time: EventFrom(e).Time}
}

// MaxWarnings bounds the Warnings kept of one pod: the latest of each
// reason, the latest reasons first. A pod the kubelet retries for hours
// records one Event a reason (its count grows), so few are ever dropped.
const MaxWarnings = 4

// KeepWarning adds w to a pod's Warnings, latest first: it replaces an
// older one of the same reason and drops the oldest past MaxWarnings.
func KeepWarning(ws []Warning, w Warning) []Warning {
	if i := slices.IndexFunc(ws, func(o Warning) bool { return o.Reason == w.Reason }); i >= 0 {
		if !w.Time.After(ws[i].Time) {
			return ws
		}
		ws = slices.Delete(ws, i, i+1)
	}
	i, _ := slices.BinarySearchFunc(ws, w, func(a, b Warning) int { return b.Time.Compare(a.Time) })
	ws = slices.Insert(ws, i, w)
	if len(ws) > MaxWarnings {
		ws = ws[:MaxWarnings]
	}
	return ws
}

// FailedCreatePodSandBox is the kubelet's Event reason when the container
// runtime cannot make a pod's sandbox (kubernetes v1.37.2
// pkg/kubelet/events/event.go; its message "Failed to create pod sandbox:
// <the runtime's error>", pkg/kubelet/kuberuntime/kuberuntime_manager.go).
const FailedCreatePodSandBox = "FailedCreatePodSandBox"

// noRuntime is containerd's error for a runtime handler its config does not
// name, as the kubelet's Event quotes it: `failed to get sandbox runtime: no
// runtime for "nvidia" is configured` (NVIDIA/gpu-operator#432, #549, #730).
var noRuntime = regexp.MustCompile(`no runtime for \\?"([^"\\]+)\\?" is configured`)

// MissingRuntime is the runtime handler the container runtime says it has
// no configuration for, from a pod's Warnings: the handler of the pod's
// RuntimeClass (nvidia) that the container toolkit writes into the
// runtime's config. False when none says so.
func MissingRuntime(ws []Warning) (string, Warning, bool) {
	for _, w := range ws {
		if w.Reason != FailedCreatePodSandBox {
			continue
		}
		if m := noRuntime.FindStringSubmatch(w.Message); m != nil {
			return m[1], w, true
		}
	}
	return "", Warning{}, false
}

// FailedPrepareDynamicResources is the kubelet's Event reason when the DRA
// drivers' kubelet plugins cannot prepare a pod's claims, before it makes
// the pod's sandbox (kubernetes v1.37.2 pkg/kubelet/events/event.go; its
// message "Failed to prepare dynamic resources: prepare dynamic
// resources: NodePrepareResources failed for ResourceClaim <claim>: <the
// driver's error>", pkg/kubelet/kuberuntime/kuberuntime_manager.go and
// pkg/kubelet/cm/dra/manager.go).
const FailedPrepareDynamicResources = "FailedPrepareDynamicResources"

// DeviceNotReady is the reason of a pod whose admission the kubelet defers
// while the device plugin of a resource it asks has not registered, instead
// of failing it (UnexpectedAdmissionError): kubernetes PR #139959, open,
// not in v1.37.2, whose kubelet fails such a pod at admission. Its texts
// are not released: gpuops matches the reason alone, on the pod's status,
// a condition or a Warning Event, and quotes what comes with it.
const DeviceNotReady = "DeviceNotReady"

// Warned is a pod's latest Warning of the reason; false when none.
func Warned(ws []Warning, reason string) (Warning, bool) {
	for _, w := range ws {
		if w.Reason == reason {
			return w, true
		}
	}
	return Warning{}, false
}

// The kubelet's reasons for a pod it refused at admission (kubernetes
// v1.37.2 pkg/kubelet/lifecycle/predicate.go): its device manager could
// not allocate (UnexpectedAdmissionError, message "Allocate failed due to
// requested number of devices unavailable for <resource>. Requested: 1,
// Available: 0, which is unexpected", pkg/kubelet/cm/admission/errors.go and
// pkg/kubelet/cm/devicemanager/manager.go), or the pods it runs request
// every one already (OutOf<resource>).
const (
	UnexpectedAdmissionError = "UnexpectedAdmissionError"
	insufficientPrefix       = "OutOf"
	devicesUnavailable       = "requested number of devices unavailable for "
)

// RefusedDevice is the device resource the kubelet refused the pod at
// admission because none was free, as its status says: false for any other
// pod.
func (p Pod) RefusedDevice() (string, bool) {
	if p.Phase != corev1.PodFailed {
		return "", false
	}
	if r, ok := strings.CutPrefix(p.StatusReason, insufficientPrefix); ok && IsDeviceResource(r) {
		return r, true
	}
	if p.StatusReason != UnexpectedAdmissionError {
		return "", false
	}
	_, rest, ok := strings.Cut(p.Reason, devicesUnavailable)
	if !ok {
		return "", false
	}
	r, _, _ := strings.Cut(rest, ". ")
	return r, IsDeviceResource(r)
}

// PluginWorkloadPrefix starts the name of the pod the operator validator's
// plugin-validation makes when its workload check is on (WITH_WORKLOAD): it
// asks for one device and is bound to the node by spec.nodeName, past the
// scheduler, so the kubelet itself refuses it when the node's devices are
// all taken (NVIDIA/gpu-operator v26.7.0
// validator/manifests/plugin-workload-validation.yaml, generateName;
// cmd/nvidia-validator/main.go, runWorkload). Its owner is the validator
// DaemonSet's owner, the ClusterPolicy, not the DaemonSet. (The CUDA
// workload pod asks for no device: the kubelet never refuses it so.)
const PluginWorkloadPrefix = "nvidia-device-plugin-validator-"

// IsPluginWorkload reports whether the pod is a plugin-validation workload
// pod.
func (p Pod) IsPluginWorkload() bool {
	return p.DaemonSet == "" && strings.HasPrefix(p.Name, PluginWorkloadPrefix)
}

// Operand reports whether the pod is an operand's, whose Warnings a health
// read keeps: a DaemonSet's, or the validator's workload pod.
func (p Pod) Operand() bool { return p.DaemonSet != "" || p.IsPluginWorkload() }

// Holders are the devices the pods running on a node request, by resource,
// and those pods (namespace/name), in name order: what the kubelet has
// allocated and not freed.
type Holders struct {
	Devices map[string]int64
	Pods    []string
}

// RefusedNodes are the nodes whose plugin-validation workload pod the
// kubelet refused for want of a free device: those whose Holders a health
// read lists.
func (s *Snapshot) RefusedNodes() []string {
	var out []string
	for _, p := range s.Pods {
		if _, ok := p.RefusedDevice(); ok && p.IsPluginWorkload() && p.Node != "" && !slices.Contains(out, p.Node) {
			out = append(out, p.Node)
		}
	}
	slices.Sort(out)
	return out
}

// DeviceRequests are the device resources a pod requests as the kubelet
// admits it: the larger of its containers' sum and any one init
// container's (an init container runs alone). An extended resource's
// request is its limit: the API requires the limit and refuses a request
// that differs ("Limit must be set for non overcommitable resources",
// kubernetes v1.37.2 pkg/apis/core/validation/validation.go).
func DeviceRequests(spec *corev1.PodSpec) map[string]int64 {
	var out map[string]int64
	each := func(cs []corev1.Container, add func(string, int64)) {
		for i := range cs {
			for name, q := range cs[i].Resources.Limits {
				if IsDeviceResource(string(name)) {
					add(string(name), q.Value())
				}
			}
		}
	}
	add := func(name string, v int64, sum bool) {
		if out == nil {
			out = map[string]int64{}
		}
		if sum {
			out[name] += v
		} else {
			out[name] = max(out[name], v)
		}
	}
	each(spec.Containers, func(name string, v int64) { add(name, v, true) })
	each(spec.InitContainers, func(name string, v int64) { add(name, v, false) })
	return out
}
