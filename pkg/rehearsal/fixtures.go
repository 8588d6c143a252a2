package rehearsal

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/rehearsal/configs"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The objects the offer rehearsals write as the GPU Operator, its operands
// and the DRA kubelet plugin would: the ClusterPolicy, the ConfigMaps it
// names, the ResourceSlices. The integration tests of the judges that read
// them build their clusters from these too.

// PolicyName is the ClusterPolicy the operator's Helm chart creates.
const PolicyName = "cluster-policy"

// helmManager is who writes the ClusterPolicy and its CRD: the operator's
// Helm chart (the API server names a write after its client's user agent).
const helmManager = "helm"

// The ConfigMaps a ClusterPolicy names for the device plugin's configs and
// the MIG manager's layouts, as the operator's docs name them.
const (
	SharingConfigMap = "time-slicing-config"
	MIGConfigMap     = "custom-mig-config"
)

var (
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	// PolicyGVR is the ClusterPolicy's resource.
	PolicyGVR = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}
)

// policyCRD is the ClusterPolicy's CustomResourceDefinition as the API
// serves the operator's: group, version, scope, names, status subresource.
// Its schema keeps the fields open: gpuops reads only a few of them
// (pkg/snapshot/read/operator.go).
func policyCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": PolicyGVR.Resource + "." + PolicyGVR.Group},
		"spec": map[string]any{
			"group": PolicyGVR.Group, "scope": "Cluster",
			"names": map[string]any{"kind": "ClusterPolicy", "listKind": "ClusterPolicyList", "plural": PolicyGVR.Resource, "singular": "clusterpolicy"},
			"versions": []any{map[string]any{
				"name": PolicyGVR.Version, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
}

// Policy is a ClusterPolicy named name with this spec.
func Policy(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PolicyGVR.GroupVersion().String(), "kind": "ClusterPolicy",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// OfferSpec is a ClusterPolicy spec naming the device plugin's config
// ConfigMap and the MIG manager's ("": none), the latter under the mixed
// MIG strategy (spec.devicePlugin.config.name, spec.migManager.config.name,
// spec.mig.strategy).
func OfferSpec(sharing, mig string) map[string]any {
	spec := map[string]any{}
	if sharing != "" {
		spec["devicePlugin"] = map[string]any{"config": map[string]any{"name": sharing}}
	}
	if mig != "" {
		spec["migManager"] = map[string]any{"config": map[string]any{"name": mig}}
		spec["mig"] = map[string]any{"strategy": "mixed"}
	}
	return spec
}

// InstallPolicy creates the ClusterPolicy CRD unless the cluster has it,
// then the policy, its status ready for namespace (as the operator writes
// it; "": none). Remove undoes it: the policy, and the CRD if it made it.
func InstallPolicy(ctx context.Context, dyn dynamic.Interface, policy *unstructured.Unstructured, namespace string, timeout time.Duration) (*Installed, error) {
	in := &Installed{dyn: dyn, name: policy.GetName(), timeout: timeout}
	crd := policyCRD()
	_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{FieldManager: helmManager})
	switch {
	case err == nil:
		in.crd = crd.GetName()
	case !apierrors.IsAlreadyExists(err):
		return nil, fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
	}
	// The CRD is served a moment after it is created.
	var created *unstructured.Unstructured
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		created, last = dyn.Resource(PolicyGVR).Create(ctx, policy, metav1.CreateOptions{FieldManager: helmManager})
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	if err == nil && last != nil {
		err = last
	}
	if err != nil {
		_ = in.Remove(ctx)
		return nil, fmt.Errorf("create ClusterPolicy %s: %w (%v)", policy.GetName(), err, last)
	}
	if namespace == "" {
		return in, nil
	}
	_ = unstructured.SetNestedField(created.Object, map[string]any{"state": "ready", "namespace": namespace}, "status")
	if _, err := dyn.Resource(PolicyGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: operand.UpgradeManager}); err != nil {
		_ = in.Remove(ctx)
		return nil, fmt.Errorf("ClusterPolicy %s status: %w", policy.GetName(), err)
	}
	return in, nil
}

// Installed is a ClusterPolicy InstallPolicy made.
type Installed struct {
	dyn     dynamic.Interface
	name    string
	crd     string // the CRD, when InstallPolicy made it
	timeout time.Duration
}

// Remove deletes the policy and the CRD InstallPolicy made, and waits until
// the CRD is gone (a CRD being deleted cannot be made again).
func (in *Installed) Remove(ctx context.Context) error {
	if err := in.dyn.Resource(PolicyGVR).Delete(ctx, in.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ClusterPolicy %s: %w", in.name, err)
	}
	if in.crd == "" {
		return nil
	}
	if err := in.dyn.Resource(crdGVR).Delete(ctx, in.crd, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete CRD %s: %w", in.crd, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, in.timeout, true, func(ctx context.Context) (bool, error) {
		_, err := in.dyn.Resource(crdGVR).Get(ctx, in.crd, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be gone: %w", in.crd, err)
	}
	return nil
}

// SharingConfigs is the device plugin's ConfigMap: configs.Sharing by key.
func SharingConfigs(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: SharingConfigMap, Namespace: namespace}, Data: maps.Clone(configs.Sharing)}
}

// MIGConfigs is the MIG manager's custom ConfigMap: configs.MIG.
func MIGConfigs(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: MIGConfigMap, Namespace: namespace},
		Data: map[string]string{operand.MIGConfigKey: configs.MIG}}
}

// FatalXID is the taint the DRA kubelet plugin's health monitor puts on a
// device after a fatal XID: no new claim gets it
// (kubernetes-sigs/dra-driver-nvidia-gpu cmd/gpu-kubelet-plugin/device_health.go).
var FatalXID = resourcev1.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourcev1.DeviceTaintEffectNoSchedule}

// Devices are n devices of the DRA driver's type typ (gpu, vfio, ...),
// named prefix-0, prefix-1, ...; the first ones tainted with taints, one
// each.
func Devices(prefix, typ string, n int, taints ...resourcev1.DeviceTaint) []resourcev1.Device {
	out := make([]resourcev1.Device, n)
	for i := range out {
		out[i] = resourcev1.Device{Name: fmt.Sprintf("%s-%d", prefix, i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{snapshot.DeviceTypeAttr: {StringValue: &typ}}}
		if i < len(taints) {
			out[i].Taints = []resourcev1.DeviceTaint{taints[i]}
		}
	}
	return out
}

// Slice is one ResourceSlice of a node's pool: the pool's generation, how
// many slices the pool has, the devices of this one.
type Slice struct {
	Generation, Count int64
	Devices           []resourcev1.Device
}

// ResourceSlice is the i-th slice of the node's pool as the DRA kubelet
// plugin's ResourceSlice controller writes it: driver gpu.nvidia.com,
// spec.nodeName, one pool named after the node, owned by the node so that
// it goes with it (k8s.io/dynamic-resource-allocation v0.37.2
// resourceslice/resourceslicecontroller.go).
func ResourceSlice(node *corev1.Node, i int, s Slice) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", node.Name, snapshot.DRADriverName, i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: resourcev1.ResourceSliceSpec{Driver: snapshot.DRADriverName, NodeName: &node.Name, Devices: s.Devices,
			Pool: resourcev1.ResourcePool{Name: node.Name, Generation: s.Generation, ResourceSliceCount: s.Count}},
	}
}
