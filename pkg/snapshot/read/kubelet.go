package read

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// What the kubelet reports of the operand pods besides their status
// (snapshot/kubelet.go): its Warning Events on them, one LIST of the
// namespace's, and, only for the nodes where it refused the validator's
// workload pod a device (Snapshot.RefusedNodes, none on a healthy fleet),
// the pods that hold the devices there, one LIST narrowed to each node.

// PodWarnings selects the Warning Events on pods: the API server selects
// Events by type and involvedObject.kind (kubernetes v1.37.2
// pkg/registry/core/event/strategy.go, ToSelectableFields).
var PodWarnings = fieldsel.AndSelectors(fieldsel.OneTermEqualSelector("type", corev1.EventTypeWarning),
	fieldsel.OneTermEqualSelector("involvedObject.kind", "Pod")).String()

// warningFields are what snapshot.WarningFrom reads of an Event: EventFrom's
// and the reason and count.
var warningFields = spec("Event", func() fields {
	f := slices.Clone(eventFields)
	f[3], f[8] = whole, whole // reason, count
	return f
}())

// readWarnings lists the Warning Events on the pods of a namespace (of
// every namespace when it is empty) and keeps, per pod as namespace/name,
// those KeepWarning keeps. A user who may not list Events gets a note: the
// verdicts then go without them.
func readWarnings(ctx context.Context, core rest.Interface, namespace string, pageSize int64) (map[string][]snapshot.Warning, []string, error) {
	out := map[string][]snapshot.Warning{}
	err := readList(ctx, func() *rest.Request { return core.Get().Namespace(namespace).Resource("events") },
		metav1.ListOptions{Limit: pageSize, FieldSelector: PodWarnings}, warningFields, nil, nil, &corev1.EventList{},
		func(e *corev1.Event, _ []byte) error {
			key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
			out[key] = snapshot.KeepWarning(out[key], snapshot.WarningFrom(e))
			return nil
		})
	switch {
	case apierrors.IsForbidden(err):
		return nil, []string{"pod Warning Events not read (a sandbox the runtime cannot create goes unseen): " + refused(err, "list", "events"+where(namespace))}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("list warning events%s: %w", where(namespace), err)
	}
	return out, nil, nil
}

// operandWarnings keeps of the Warnings those on the snapshot's operand
// pods (snapshot.Pod.Operand), of the namespace, by pod name.
func operandWarnings(all map[string][]snapshot.Warning, namespace string, pods []snapshot.Pod) map[string][]snapshot.Warning {
	out := map[string][]snapshot.Warning{}
	for _, p := range pods {
		if ws, ok := all[namespace+"/"+p.Name]; ok && p.Operand() {
			out[p.Name] = ws
		}
	}
	return out
}

// holderFields are what snapshot.DeviceRequests reads of a pod, its name,
// namespace and phase.
var holderFields = spec("Pod", func() fields {
	limits := fields{8: fields{1: whole}} // a container's resources.limits
	return fields{
		1: fields{1: whole, 3: whole},               // metadata: name, namespace
		2: fields{2: limits, 10: whole, 20: limits}, // spec: containers, nodeName, initContainers
		3: fields{1: whole},                         // status: phase
	}
}())

// Holders lists, for each node, the pods on it in every namespace, one
// LIST narrowed by spec.nodeName (an index of the API server's), and sums
// the devices those that have not ended request: what the kubelet has
// handed out there. A user who may not list pods across namespaces gets a
// note and no holders.
func Holders(ctx context.Context, core rest.Interface, nodes []string, pageSize int64) (map[string]snapshot.Holders, []string, error) {
	if len(nodes) == 0 {
		return nil, nil, nil
	}
	out := make(map[string]snapshot.Holders, len(nodes))
	for _, node := range nodes {
		h := snapshot.Holders{Devices: map[string]int64{}}
		err := readList(ctx, func() *rest.Request { return core.Get().Resource("pods") },
			metav1.ListOptions{Limit: pageSize, FieldSelector: fieldsel.OneTermEqualSelector("spec.nodeName", node).String()},
			holderFields, nil, nil, &corev1.PodList{}, func(p *corev1.Pod, _ []byte) error {
				if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					return nil // the kubelet has freed its devices
				}
				devices := snapshot.DeviceRequests(&p.Spec)
				if len(devices) == 0 {
					return nil
				}
				for name, n := range devices {
					h.Devices[name] += n
				}
				h.Pods = append(h.Pods, p.Namespace+"/"+p.Name)
				return nil
			})
		switch {
		case apierrors.IsForbidden(err):
			return nil, []string{"the pods holding the GPUs of " + node + " not read (whether the validator's workload pod was refused for a full node is unknown): " + refused(err, "list", "pods in all namespaces")}, nil
		case err != nil:
			return nil, nil, fmt.Errorf("list pods on node %s: %w", node, err)
		}
		slices.Sort(h.Pods)
		out[node] = h
	}
	return out, nil, nil
}

// Warnings reads the Warning Events on the pods of a namespace (of every
// namespace when it is empty), by pod as namespace/name, as readWarnings
// does for health: the workload's side reads the kubelet's words so.
func Warnings(ctx context.Context, c kubernetes.Interface, namespace string) (map[string][]snapshot.Warning, []string, error) {
	return readWarnings(ctx, c.CoreV1().RESTClient(), namespace, 0)
}
