package read

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// WorkloadOptions say which GPU pods to read.
type WorkloadOptions struct {
	Namespace     string // of the pods; empty: every namespace
	LabelSelector string // of the pods; empty: all
	PageSize      int64  // as Options.PageSize
	// NoRejected lists no Failed pods: a snapshot read beside with
	// Options.Kubelet lists those of every namespace, for both
	// (GPUPods.UseRejected).
	NoRejected bool
}

// Unended selects the pods that have not ended, as the scheduler counts
// what a node has given out (kubernetes v1.37.2
// pkg/scheduler/framework/plugins/noderesources: every pod assigned and
// not terminal): the API server selects pods by status.phase.
var Unended = fieldsel.AndSelectors(fieldsel.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fieldsel.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed))).String()

// Failed selects the pods that ended in failure: those the kubelet
// refused at admission among them.
var Failed = fieldsel.OneTermEqualSelector("status.phase", string(corev1.PodFailed)).String()

// GPUPods reads the workload side of the cluster (snapshot.GPUPods), four
// LISTs side by side: the pods that have not ended, trimmed as they arrive
// to what snapshot.GPUPodFrom reads and dropped there unless they ask a
// device or hold a claim; the Failed pods, kept when the kubelet refused
// them at admission (unless o.NoRejected); the ResourceClaims and the
// DeviceClasses. A kind the
// cluster does not serve or the user may not list is a note; the pods'
// lists are not optional.
func GPUPods(ctx context.Context, c kubernetes.Interface, o WorkloadOptions) (*snapshot.GPUPods, error) {
	f := &snapshot.GPUPods{}
	core := c.CoreV1().RESTClient()
	pods := func() *rest.Request { return core.Get().Namespace(o.Namespace).Resource("pods") }
	var read []snapshot.GPUPod
	var classNotes, claimNotes []string
	var g errgroup.Group
	g.Go(func() error {
		err := readList(ctx, pods, metav1.ListOptions{FieldSelector: Unended, LabelSelector: o.LabelSelector, Limit: o.PageSize},
			workloadPodFields, nil, nil, &corev1.PodList{}, func(p *corev1.Pod, _ []byte) error {
				if wp, ok := snapshot.GPUPodFrom(p); ok {
					read = append(read, wp)
				}
				return nil
			})
		if err != nil {
			return fmt.Errorf("list pods%s: %w", where(o.Namespace), err)
		}
		return nil
	})
	if !o.NoRejected {
		g.Go(func() (err error) {
			f.Rejected, err = readRejected(ctx, core, o.Namespace, o.LabelSelector, o.PageSize)
			return err
		})
	}
	rc := c.ResourceV1().RESTClient()
	g.Go(func() (err error) {
		claims := map[string]snapshot.Claim{}
		err = readList(ctx, func() *rest.Request { return rc.Get().Namespace(o.Namespace).Resource("resourceclaims") },
			metav1.ListOptions{Limit: o.PageSize}, claimFields, nil, nil, &resourcev1.ResourceClaimList{}, func(c *resourcev1.ResourceClaim, _ []byte) error {
				claim := snapshot.ClaimFrom(c)
				claims[claim.Key()] = claim
				return nil
			})
		if claimNotes, err = optional(err, "resourceclaims", "pods holding a claim are judged GPU pods"); err == nil && claimNotes == nil {
			f.Claims = claims
		}
		return err
	})
	g.Go(func() (err error) {
		classes := map[string]bool{}
		err = readList(ctx, func() *rest.Request { return rc.Get().Resource("deviceclasses") },
			metav1.ListOptions{Limit: o.PageSize}, classFields, nil, nil, &resourcev1.DeviceClassList{}, func(c *resourcev1.DeviceClass, _ []byte) error {
				classes[c.Name] = snapshot.GPUClass(c)
				return nil
			})
		if classNotes, err = optional(err, "deviceclasses", "a claim waiting for its devices is not judged by its class"); err == nil && classNotes == nil {
			f.Classes = classes
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	f.Notes = append(claimNotes, classNotes...)
	f.Keep(read)
	return f, nil
}

// optional turns the error of a list of resource.k8s.io/v1 kind the
// cluster may not serve, or the user may not make, into a note saying what
// is then left unjudged.
func optional(err error, kind, unjudged string) ([]string, error) {
	switch {
	case err == nil:
		return nil, nil
	case apierrors.IsNotFound(err):
		return []string{"the cluster does not serve " + kind + ".resource.k8s.io/v1: " + unjudged}, nil
	case apierrors.IsForbidden(err):
		return []string{refused(err, "list", kind+".resource.k8s.io") + ": " + unjudged}, nil
	}
	return nil, fmt.Errorf("list %s: %w", kind, err)
}

func where(namespace string) string {
	if namespace == "" {
		return " in all namespaces"
	}
	return " in namespace " + namespace
}

// workloadPodFields are what snapshot.GPUPodFrom reads: of a container's
// resources only the device limits (snapshot.IsDeviceResource; a pod
// asking none of them and holding no claim is dropped as it is decoded),
// of its conditions only PodScheduled, of its containers' statuses only
// their states; its status's reason and message (DeviceNotReady).
var workloadPodFields = spec("Pod", func() fields {
	deviceLimits := fields{8: fields{1: devices}} // a container's resources.limits
	return fields{
		1: fields{ // metadata
			1:  whole,         // name
			3:  whole,         // namespace
			8:  whole,         // creationTimestamp
			13: controllerRef, // ownerReferences
		},
		2: fields{ // spec
			2:  deviceLimits,     // containers
			7:  whole,            // nodeSelector
			10: whole,            // nodeName
			18: fields{1: whole}, // affinity: nodeAffinity
			20: deviceLimits,     // initContainers
			22: whole,            // tolerations
			39: whole,            // resourceClaims
		},
		3: fields{ // status
			1:  whole,                                                                    // phase
			2:  entries{func(t string) bool { return t == string(corev1.PodScheduled) }}, // conditions
			3:  whole,                                                                    // message
			4:  whole,                                                                    // reason
			8:  containerStates,                                                          // containerStatuses
			10: containerStates,                                                          // initContainerStatuses
			15: whole,                                                                    // resourceClaimStatuses
		},
	}
}())

// containerStates are what snapshot.GPUPodFrom reads of a container status:
// its state and last state (why it does not start).
var containerStates = fields{2: whole, 3: whole}

// rejectedFields are what snapshot.RejectedPodFrom reads of a Failed pod.
var rejectedFields = spec("Pod", fields{
	1: fields{1: whole, 3: whole},                     // metadata: name, namespace
	2: fields{10: whole},                              // spec: nodeName
	3: fields{1: whole, 3: whole, 4: whole, 7: whole}, // status: phase, message, reason, startTime
})

// readRejected lists the Failed pods of a namespace (of every namespace
// when it is empty) and keeps those the kubelet refused at admission
// (snapshot.RejectedPodFrom): the workload side's read, and health's.
func readRejected(ctx context.Context, core rest.Interface, namespace, labelSelector string, pageSize int64) ([]snapshot.RejectedPod, error) {
	var out []snapshot.RejectedPod
	err := readList(ctx, func() *rest.Request { return core.Get().Namespace(namespace).Resource("pods") },
		metav1.ListOptions{FieldSelector: Failed, LabelSelector: labelSelector, Limit: pageSize},
		rejectedFields, nil, nil, &corev1.PodList{}, func(p *corev1.Pod, _ []byte) error {
			if r, ok := snapshot.RejectedPodFrom(p); ok {
				out = append(out, r)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list failed pods%s: %w", where(namespace), err)
	}
	return out, nil
}

// claimFields are what snapshot.ClaimFrom reads of a ResourceClaim: its
// requests' device classes and counts and its allocation's results, not their
// selectors, configs and tolerations.
var claimFields = spec("ResourceClaim", fields{
	1: fields{1: whole, 3: whole}, // metadata: name, namespace
	2: fields{ // spec
		1: fields{ // devices
			1: fields{ // requests
				2: fields{1: whole, 3: whole, 4: whole}, // exactly: deviceClassName, allocationMode, count
				3: fields{2: whole, 4: whole, 5: whole}, // firstAvailable: deviceClassName, allocationMode, count
			},
		},
	},
	3: fields{ // status
		1: fields{ // allocation
			1: fields{ // devices
				1: fields{2: whole, 3: whole, 4: whole, 5: whole}, // results: driver, pool, device, adminAccess
			},
		},
	},
})

// classFields are what snapshot.GPUClass reads of a DeviceClass: its name
// and selectors.
var classFields = spec("DeviceClass", fields{
	1: fields{1: whole}, // metadata: name
	2: fields{1: whole}, // spec: selectors
})

// ReplicaSets lists the namespace's ReplicaSets and maps each Deployment
// to those it controls, by name.
func ReplicaSets(ctx context.Context, c kubernetes.Interface, namespace string) (map[string][]string, error) {
	out := map[string][]string{}
	err := readList(ctx, func() *rest.Request {
		return c.AppsV1().RESTClient().Get().Namespace(namespace).Resource("replicasets")
	},
		metav1.ListOptions{}, replicaSetFields, nil, nil, &appsv1.ReplicaSetList{}, func(rs *appsv1.ReplicaSet, _ []byte) error {
			if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
				out[ref.Name] = append(out[ref.Name], rs.Name)
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list replicasets in namespace %s: %w", namespace, err)
	}
	return out, nil
}

// replicaSetFields are what ReplicaSets reads of one: its name and
// controller.
var replicaSetFields = spec("ReplicaSet", fields{1: fields{1: whole, 13: controllerRef}})

// PodsIn lists the namespace's pods of a target (those owns accepts, by
// the pod's name and its controller as kind/name, empty for a bare pod),
// of any phase, as no GPU pods: why each is not one (it asks no GPU, or it
// ended), each trimmed to what GPUPodFrom reads, which holds its
// controller, phase and reason too. A name, when given, narrows the LIST
// to that pod (metadata.name).
func PodsIn(ctx context.Context, c kubernetes.Interface, namespace, name string, owns func(name, owner string) bool) ([]snapshot.NonGPUPod, error) {
	o := metav1.ListOptions{}
	if name != "" {
		o.FieldSelector = fieldsel.OneTermEqualSelector("metadata.name", name).String()
	}
	var out []snapshot.NonGPUPod
	err := readList(ctx, func() *rest.Request { return c.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods") }, o,
		workloadPodFields, nil, nil, &corev1.PodList{}, func(p *corev1.Pod, _ []byte) error {
			owner := ""
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
				owner = ref.Kind + "/" + ref.Name
			}
			if !owns(p.Name, owner) {
				return nil
			}
			why := "asks no GPU"
			if _, gpu := snapshot.GPUPodFrom(p); gpu || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				why = "phase " + string(p.Status.Phase)
				if p.Status.Reason != "" {
					why += ", " + p.Status.Reason
				}
			}
			out = append(out, snapshot.NonGPUPod{Pod: namespace + "/" + p.Name, Why: why})
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list pods in namespace %s: %w", namespace, err)
	}
	return out, nil
}

// NonGPUStub is what PodsIn reads of a pod that is no GPU pod and was not
// refused by the kubelet: its name, namespace and controller (whose target
// it is), its node and its phase and reason (why it is no GPU pod: it asks
// none, or it ended); no container, so that it asks nothing. A bundle keeps
// the others' pods so (collect), small, so that why says of one what it
// says live.
func NonGPUStub(p *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, Status: corev1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason}}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		s.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	return s
}
