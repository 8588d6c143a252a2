package read

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The GPU Operator's own resources, cluster-scoped: one LIST each.
const (
	clusterPolicies = "/apis/nvidia.com/v1/clusterpolicies"
	nvidiaDrivers   = "/apis/nvidia.com/v1alpha1/nvidiadrivers"
)

// Operator reads the GPU Operator's ClusterPolicy and NVIDIADriver objects
// into s, as Snapshot does when Options.Operator is set: for a reader that
// keeps the rest of the state itself (the live judge).
func Operator(ctx context.Context, c kubernetes.Interface, s *snapshot.Snapshot) error {
	return readOperator(ctx, c.Discovery().RESTClient(), s)
}

// readOperator reads the ClusterPolicy and the NVIDIADriver objects into s.
// A resource the cluster does not serve (no GPU Operator, or an older one)
// or the user may not list is skipped with a note, not an error: the judges
// work without it, only less precisely.
func readOperator(ctx context.Context, rc rest.Interface, s *snapshot.Snapshot) error {
	var policies struct{ Items []clusterPolicy }
	switch err := list(ctx, rc, clusterPolicies, &policies); {
	case apierrors.IsNotFound(err):
		s.Notes = append(s.Notes, "no ClusterPolicy: the cluster does not serve clusterpolicies.nvidia.com")
	case apierrors.IsForbidden(err):
		s.Notes = append(s.Notes, "ClusterPolicy not read (operands it switches off read as missing): the user may not list clusterpolicies.nvidia.com")
	case err != nil:
		return fmt.Errorf("list clusterpolicies.nvidia.com: %w", err)
	default:
		s.Policy = pick(policies.Items)
	}
	var drivers struct{ Items []nvidiaDriver }
	switch err := list(ctx, rc, nvidiaDrivers, &drivers); {
	case apierrors.IsForbidden(err):
		if s.Policy != nil && s.Policy.NVIDIADriverCRD {
			s.Notes = append(s.Notes, "NVIDIADriver objects not read (the driver is judged by its pods alone): the user may not list nvidiadrivers.nvidia.com")
		}
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("list nvidiadrivers.nvidia.com: %w", err)
	default: // a cluster that does not serve them has none
		s.NVIDIADrivers = []snapshot.NVIDIADriver{}
		for _, d := range drivers.Items {
			s.NVIDIADrivers = append(s.NVIDIADrivers, snapshot.NVIDIADriver{Name: d.Metadata.Name, DriverType: d.Spec.DriverType})
		}
	}
	return nil
}

// list GETs a list of custom resources as JSON (they have no protobuf).
func list(ctx context.Context, rc rest.Interface, path string, into any) error {
	body, err := rc.Get().AbsPath(path).SetHeader("Accept", "application/json").Do(ctx).Raw()
	if err != nil {
		return err
	}
	return json.Unmarshal(body, into)
}

type clusterPolicy struct {
	Metadata struct{ Name string }
	Spec     map[string]json.RawMessage
	Status   struct{ State, Namespace string }
}

type nvidiaDriver struct {
	Metadata struct{ Name string }
	Spec     struct{ DriverType string }
}

// pick returns the ClusterPolicy the operator acts on: it marks every other
// one "ignored" (a cluster has one). Of several candidates, the first by name.
func pick(items []clusterPolicy) *snapshot.ClusterPolicy {
	slices.SortFunc(items, func(a, b clusterPolicy) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	i := slices.IndexFunc(items, func(p clusterPolicy) bool { return p.Status.State != "ignored" })
	if i < 0 {
		return nil
	}
	p := items[i]
	out := &snapshot.ClusterPolicy{Name: p.Metadata.Name, Namespace: p.Status.Namespace, Enabled: map[string]bool{}}
	for field, raw := range p.Spec {
		var f struct {
			Enabled            *bool
			Mode               string
			UseNvidiaDriverCRD *bool
		}
		if json.Unmarshal(raw, &f) != nil {
			continue // not an object: no switch
		}
		if f.Enabled != nil {
			out.Enabled[field] = *f.Enabled
		}
		if field == "sandboxWorkloads" {
			out.SandboxMode = f.Mode
		}
		if field == "driver" && f.UseNvidiaDriverCRD != nil {
			out.NVIDIADriverCRD = *f.UseNvidiaDriverCRD
		}
	}
	return out
}

// trace keeps who last wrote the node's labels that pick selects. whole is
// the node's protobuf bytes, or nil when n was decoded whole (JSON).
func trace(node *snapshot.Node, n *corev1.Node, whole []byte, pick func(key, value string) bool) error {
	var keys []string
	for k, v := range node.Labels {
		if pick(k, v) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	entries := n.ManagedFields
	if whole != nil {
		var err error
		if entries, err = managedFields(whole, keys); err != nil {
			return err
		}
	}
	node.LabelChanges = snapshot.LabelChangesFrom(entries, keys)
	return nil
}

// managedFields decodes the managedFields entries of a node's protobuf
// bytes that name one of keys: the others (the kubelet's status, NFD's
// hundred labels) can outweigh the rest of what a judge keeps, so they are
// not even copied.
func managedFields(node []byte, keys []string) ([]metav1.ManagedFieldsEntry, error) {
	meta, err := field(node, 1) // metadata
	if err != nil {
		return nil, err
	}
	var out []metav1.ManagedFieldsEntry
	err = eachField(meta, 17, func(b []byte) error { // managedFields
		if !slices.ContainsFunc(keys, func(k string) bool { return bytes.Contains(b, []byte(k)) }) {
			return nil
		}
		var e metav1.ManagedFieldsEntry
		if err := e.Unmarshal(b); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}
