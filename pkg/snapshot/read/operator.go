package read

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The GPU Operator's own resources, cluster-scoped: one LIST each.
const (
	clusterPolicies = "/apis/nvidia.com/v1/clusterpolicies"
	nvidiaDrivers   = "/apis/nvidia.com/v1alpha1/nvidiadrivers"
)

// Operator reads the GPU Operator's ClusterPolicy and NVIDIADriver objects
// into s, as Snapshot does when Options.Operator is set: for a reader that
// keeps the rest of the state itself (the live tracker).
func Operator(ctx context.Context, c kubernetes.Interface, s *snapshot.Snapshot) error {
	return readOperator(ctx, c.Discovery().RESTClient(), s)
}

// readOperator reads the ClusterPolicy, the NVIDIADriver objects and the
// operator's version (operatorVersion, beside them; else the chart's label
// on the policy; else, as a release, from the served ClusterPolicy CRD's
// schema: crdFields) into s. A resource the
// cluster does not serve (no GPU Operator, or an older one) or the user may
// not list is skipped with a note, not an error: the judges work without it,
// only less precisely.
func readOperator(ctx context.Context, rc rest.Interface, s *snapshot.Snapshot) error {
	type read struct {
		tag string
		err error
	}
	version := make(chan read, 1)
	go func() {
		tag, err := operatorVersion(ctx, rc, s.Namespace)
		version <- read{tag, err}
	}()
	var policies struct{ Items []clusterPolicy }
	switch err := list(ctx, rc, clusterPolicies, &policies); {
	case apierrors.IsNotFound(err):
		s.Notes = append(s.Notes, "no ClusterPolicy: the cluster does not serve clusterpolicies.nvidia.com")
	case apierrors.IsForbidden(err):
		s.Notes = append(s.Notes, "ClusterPolicy not read (operands it switches off read as missing): "+refused(err, "list", "clusterpolicies.nvidia.com"))
	case err != nil:
		return fmt.Errorf("list clusterpolicies.nvidia.com: %w", err)
	default:
		s.Policy = pick(policies.Items)
	}
	v := <-version
	switch {
	case apierrors.IsForbidden(v.err):
		if s.Policy != nil { // the lab, without an operator, has nothing to say
			s.Notes = append(s.Notes, fmt.Sprintf("the GPU Operator's version not read (judged as %s, the newest gpuops knows): %s",
				operand.Newest().Version, refused(v.err, "list", "deployments in namespace "+s.Namespace)))
		}
	case v.err != nil:
		return fmt.Errorf("list deployments in namespace %s: %w", s.Namespace, v.err)
	case v.tag != "":
		s.OperatorVersion = v.tag
	case s.Policy != nil:
		s.OperatorVersion = s.Policy.ChartVersion
	}
	if v.err == nil && s.OperatorVersion == "" && s.Policy != nil {
		fields, err := crdFields(ctx, rc)
		switch {
		case apierrors.IsForbidden(err):
			s.Notes = append(s.Notes, fmt.Sprintf("the GPU Operator's version not found and its ClusterPolicy CRD not read (judged as %s, the newest gpuops knows): %s",
				operand.Newest().Version, refused(err, "get", "customresourcedefinitions")))
		case apierrors.IsNotFound(err): // a policy served by no CRD of that name: nothing to tell from
		case err != nil:
			return fmt.Errorf("get customresourcedefinition %s: %w", ClusterPolicyCRD, err)
		default:
			s.CRDFields = fields
		}
	}
	var drivers struct{ Items []nvidiaDriver }
	switch err := list(ctx, rc, nvidiaDrivers, &drivers); {
	case apierrors.IsForbidden(err):
		if s.Policy != nil && s.Policy.NVIDIADriverCRD {
			s.Notes = append(s.Notes, "NVIDIADriver objects not read (the driver is judged by its pods alone): "+refused(err, "list", "nvidiadrivers.nvidia.com"))
		}
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("list nvidiadrivers.nvidia.com: %w", err)
	default: // a cluster that does not serve them has none
		s.NVIDIADrivers = []snapshot.NVIDIADriver{}
		for _, d := range drivers.Items {
			s.NVIDIADrivers = append(s.NVIDIADrivers, snapshot.NVIDIADriver{Name: d.Metadata.Name, DriverType: d.Spec.DriverType,
				NodeSelector: d.Spec.NodeSelector, UpgradePolicy: d.Spec.UpgradePolicy.resolve(operand.DefaultNVIDIADriverAutoUpgrade)})
		}
	}
	return nil
}

// operatorComponent is the value of app.kubernetes.io/component on the
// GPU Operator's Deployment, and its container's name (NVIDIA/gpu-operator
// deployments/gpu-operator/templates/operator.yaml, every release).
const operatorComponent = "gpu-operator"

// OperatorSelector selects the GPU Operator's Deployment.
const OperatorSelector = "app.kubernetes.io/component=" + operatorComponent

// operatorVersion is the image tag the GPU Operator's Deployment in the
// namespace runs ("" when there is none): one LIST by its component label,
// of one small object.
func operatorVersion(ctx context.Context, rc rest.Interface, namespace string) (string, error) {
	var deployments struct {
		Items []struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct{ Name, Image string }
					}
				}
			}
		}
	}
	body, err := JSON(ctx, rc.Get().AbsPath("/apis/apps/v1/namespaces", namespace, "deployments").
		Param("labelSelector", OperatorSelector))
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(body, &deployments); err != nil {
		return "", err
	}
	for _, d := range deployments.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == operatorComponent {
				return imageTag(c.Image), nil
			}
		}
	}
	return "", nil
}

// ClusterPolicyCRD is the ClusterPolicy's CustomResourceDefinition: the
// one CRD a judge reads, and so the one a bundle holds (pkg/collect).
const ClusterPolicyCRD = "clusterpolicies.nvidia.com"

// crdSchema is a node of an OpenAPI v3 schema, as far as its properties.
type crdSchema struct {
	Properties map[string]crdSchema
}

// crdFields are the fields of those that mark a release
// (operand.Release.SchemaFields) which the served ClusterPolicy CRD's
// schema has below spec, in any version it serves: one GET, made only when
// no version was found otherwise (empty, not nil, for none). A schema that
// spells out no field of spec (its fields kept open) tells no release:
// nil.
func crdFields(ctx context.Context, rc rest.Interface) ([]string, error) {
	var crd struct {
		Spec struct {
			Versions []struct {
				Served bool
				Schema struct{ OpenAPIV3Schema crdSchema }
			}
		}
	}
	body, err := JSON(ctx, rc.Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", ClusterPolicyCRD))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &crd); err != nil {
		return nil, err
	}
	spelled := false
	for _, v := range crd.Spec.Versions {
		spelled = spelled || v.Served && len(v.Schema.OpenAPIV3Schema.Properties["spec"].Properties) > 0
	}
	if !spelled {
		return nil, nil
	}
	has := func(field string) bool {
		for _, v := range crd.Spec.Versions {
			at, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
			for _, name := range strings.Split(field, ".") {
				if !ok {
					break
				}
				at, ok = at.Properties[name]
			}
			if ok && v.Served {
				return true
			}
		}
		return false
	}
	out := []string{}
	for _, r := range operand.Releases {
		for _, f := range r.SchemaFields {
			if has(f) {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// imageTag is the tag of an image reference: its digest when it has one,
// "latest" when it names neither (as the runtime reads it).
func imageTag(image string) string {
	if _, digest, ok := strings.Cut(image, "@"); ok {
		return digest
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok {
		return tag
	}
	return "latest"
}

// list GETs a list of custom resources as JSON (they have no protobuf).
func list(ctx context.Context, rc rest.Interface, path string, into any) error {
	body, err := JSON(ctx, rc.Get().AbsPath(path))
	if err != nil {
		return err
	}
	return json.Unmarshal(body, into)
}

// JSON makes req, asking for JSON, and returns the body, or the error as
// the server's Status says it: Raw's own error is made of the status code
// alone, so that the reason (--from's NotHeld, pkg/bundle) and the message
// would be lost.
func JSON(ctx context.Context, req *rest.Request) ([]byte, error) {
	res := req.SetHeader("Accept", "application/json").Do(ctx)
	body, err := res.Raw()
	if err != nil {
		return nil, res.Error()
	}
	return body, nil
}

type clusterPolicy struct {
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Spec   map[string]json.RawMessage
	Status struct{ State, Namespace string }
}

type nvidiaDriver struct {
	Metadata struct{ Name string }
	Spec     struct {
		DriverType    string
		NodeSelector  map[string]string
		UpgradePolicy *upgradePolicy
	}
}

// upgradePolicy is a DriverUpgradePolicySpec as the API serves it; a field
// left out is nil, so that resolve can tell it from a zero.
type upgradePolicy struct {
	AutoUpgrade         *bool
	MaxParallelUpgrades *int
	MaxUnavailable      *intstr.IntOrString
	WaitForCompletion   *struct {
		PodSelector    string
		TimeoutSeconds int // default 0
	}
	PodDeletion *struct {
		Force, DeleteEmptyDir bool
		TimeoutSeconds        *int
	}
	Drain *struct {
		Enable, Force, DeleteEmptyDir bool
		PodSelector                   string
		TimeoutSeconds                *int
	}
}

// resolve fills in the CRD's defaults (operand.DefaultMaxParallelUpgrades
// and the rest) where the policy leaves a field out, with autoUpgrade's
// default of its kind. A nil policy resolves to the defaults when
// autoUpgrade defaults to true (an NVIDIADriver: GetUpgradePolicyWithDefaults),
// else to nil (a ClusterPolicy without one upgrades nothing).
func (p *upgradePolicy) resolve(autoUpgrade bool) *snapshot.UpgradePolicy {
	if p == nil {
		if !autoUpgrade {
			return nil
		}
		p = &upgradePolicy{}
	}
	or := func(v *int, def int) int {
		if v == nil {
			return def
		}
		return *v
	}
	maxUnavailable := intstr.FromString(operand.DefaultMaxUnavailable)
	if p.MaxUnavailable != nil {
		maxUnavailable = *p.MaxUnavailable
	}
	out := &snapshot.UpgradePolicy{
		AutoUpgrade:         autoUpgrade,
		MaxParallelUpgrades: or(p.MaxParallelUpgrades, operand.DefaultMaxParallelUpgrades),
		MaxUnavailable:      &maxUnavailable,
		PodDeletion:         snapshot.PodDeletion{TimeoutSeconds: operand.DefaultUpgradeTimeoutSeconds},
		Drain:               snapshot.Drain{TimeoutSeconds: operand.DefaultUpgradeTimeoutSeconds},
	}
	if p.AutoUpgrade != nil {
		out.AutoUpgrade = *p.AutoUpgrade
	}
	if w := p.WaitForCompletion; w != nil {
		out.WaitForCompletion = snapshot.WaitForCompletion{PodSelector: w.PodSelector, TimeoutSeconds: w.TimeoutSeconds}
	}
	if d := p.PodDeletion; d != nil {
		out.PodDeletion = snapshot.PodDeletion{Force: d.Force, DeleteEmptyDir: d.DeleteEmptyDir,
			TimeoutSeconds: or(d.TimeoutSeconds, operand.DefaultUpgradeTimeoutSeconds)}
	}
	if d := p.Drain; d != nil {
		out.Drain = snapshot.Drain{Enable: d.Enable, Force: d.Force, DeleteEmptyDir: d.DeleteEmptyDir, PodSelector: d.PodSelector,
			TimeoutSeconds: or(d.TimeoutSeconds, operand.DefaultUpgradeTimeoutSeconds)}
	}
	return out
}

// chartVersionLabel is the label the GPU Operator's Helm chart sets on the
// ClusterPolicy to the chart's appVersion, the operator's version
// (deployments/gpu-operator/templates/_helpers.tpl, gpu-operator.labels).
const chartVersionLabel = "app.kubernetes.io/version"

// pick returns the ClusterPolicy the operator acts on: it marks every other
// one "ignored" (a cluster has one). Of several candidates, the first by name.
func pick(items []clusterPolicy) *snapshot.ClusterPolicy {
	slices.SortFunc(items, func(a, b clusterPolicy) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	i := slices.IndexFunc(items, func(p clusterPolicy) bool { return p.Status.State != "ignored" })
	if i < 0 {
		return nil
	}
	p := items[i]
	out := &snapshot.ClusterPolicy{Name: p.Metadata.Name, Namespace: p.Status.Namespace, Enabled: map[string]bool{}, Offer: offerPolicy(p.Spec),
		ChartVersion: p.Metadata.Labels[chartVersionLabel]}
	for field, raw := range p.Spec {
		var f struct {
			Enabled            *bool
			Mode               string
			UseNvidiaDriverCRD *bool
			UpgradePolicy      *upgradePolicy
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
		if field != "driver" {
			continue
		}
		if f.UseNvidiaDriverCRD != nil {
			out.NVIDIADriverCRD = *f.UseNvidiaDriverCRD
		}
		out.UpgradePolicy = f.UpgradePolicy.resolve(operand.DefaultClusterPolicyAutoUpgrade)
	}
	return out
}

// trace keeps who last wrote the node's labels that pick selects (nil:
// none) and, when it is cordoned or tainted, who cordoned and who tainted
// it. whole is the node's protobuf bytes, or nil when n was decoded whole
// (JSON).
func trace(node *snapshot.Node, n *corev1.Node, whole []byte, pick func(key, value string) bool) error {
	var keys []string
	if pick != nil {
		keys = snapshot.TracedKeys(node.Labels, pick)
	}
	spec := node.Unschedulable || len(node.Taints) > 0
	if len(keys) == 0 && !spec {
		return nil
	}
	entries := n.ManagedFields
	if whole != nil {
		needles := keys
		if spec {
			needles = append(needles[:len(needles):len(needles)], snapshot.SpecNeedles...)
		}
		var err error
		if entries, err = ManagedFields(whole, needles); err != nil {
			return err
		}
	}
	if len(keys) > 0 {
		node.LabelChanges = snapshot.LabelChangesFrom(entries, keys)
	}
	node.TraceSpec(entries)
	return nil
}

// ManagedFields decodes the managedFields entries of a node's protobuf
// bytes that name one of needles: the others (the kubelet's status, NFD's
// hundred labels) can outweigh the rest of what a judge keeps, so they are
// not even copied. A bundle keeps a node's so (pkg/collect).
func ManagedFields(node []byte, needles []string) ([]metav1.ManagedFieldsEntry, error) {
	meta, err := field(node, 1) // metadata
	if err != nil {
		return nil, err
	}
	var out []metav1.ManagedFieldsEntry
	err = eachField(meta, 17, func(b []byte) error { // managedFields
		if !slices.ContainsFunc(needles, func(k string) bool { return bytes.Contains(b, []byte(k)) }) {
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

// readUpgrades reads what the driver upgrade verdict needs besides nodes,
// pods and the policy, one LIST each: the namespace's ControllerRevisions,
// for the latest template of each DaemonSet, and the upgrade controller's
// Events on nodes. A list the user may not make is skipped with a note.
func readUpgrades(ctx context.Context, c kubernetes.Interface, namespace string, pageSize int64) (revisions map[string]string, events map[string]snapshot.Event, notes []string, err error) {
	revisions, err = readRevisions(ctx, c.AppsV1().RESTClient(), namespace, pageSize)
	switch {
	case apierrors.IsForbidden(err):
		notes = append(notes, "ControllerRevisions not read (whether a driver pod runs its DaemonSet's latest template is unknown): "+refused(err, "list", "controllerrevisions in namespace "+namespace))
	case err != nil:
		return nil, nil, nil, fmt.Errorf("list controllerrevisions in namespace %s: %w", namespace, err)
	}
	events, err = readUpgradeEvents(ctx, c.CoreV1().RESTClient(), pageSize)
	switch {
	case apierrors.IsForbidden(err):
		notes = append(notes, "driver upgrade Events not read (a failed upgrade's cause may be unknown): "+refused(err, "list", "events in namespace "+metav1.NamespaceDefault))
	case err != nil:
		return nil, nil, nil, fmt.Errorf("list %s events: %w", operand.UpgradeEventReason, err)
	}
	return revisions, events, notes, nil
}

// readRevisions maps each DaemonSet of the namespace to the hash of its
// highest-numbered ControllerRevision, as the upgrade controller finds a
// DaemonSet's current template (GetDaemonsetControllerRevisionHash): the
// revision's controller-revision-hash label, else its name past "<ds>-".
func readRevisions(ctx context.Context, apps rest.Interface, namespace string, pageSize int64) (map[string]string, error) {
	var revs []snapshot.Revision
	err := readList(ctx, func() *rest.Request { return apps.Get().Namespace(namespace).Resource("controllerrevisions") },
		metav1.ListOptions{Limit: pageSize}, revisionFields, podLabels, nil, &appsv1.ControllerRevisionList{},
		func(r *appsv1.ControllerRevision, _ []byte) error {
			if rev, ok := snapshot.RevisionFrom(r); ok {
				revs = append(revs, rev)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return snapshot.LatestRevisions(revs), nil
}

// readUpgradeEvents keeps, per node, the upgrade controller's Event that
// says most (snapshot.Event.Supersedes). The recorder files the Events of
// a node, a cluster-scoped object, in namespace default.
func readUpgradeEvents(ctx context.Context, core rest.Interface, pageSize int64) (map[string]snapshot.Event, error) {
	out := map[string]snapshot.Event{}
	err := readList(ctx, func() *rest.Request { return core.Get().Namespace(metav1.NamespaceDefault).Resource("events") },
		metav1.ListOptions{Limit: pageSize, FieldSelector: UpgradeEvents}, eventFields, nil, nil, &corev1.EventList{},
		func(e *corev1.Event, _ []byte) error {
			snapshot.KeepEvent(out, e.InvolvedObject.Name, snapshot.EventFrom(e))
			return nil
		})
	return out, err
}

// UpgradeEvents selects the upgrade controller's Events on nodes (in
// namespace default, where its recorder files them).
var UpgradeEvents = fieldsel.AndSelectors(fieldsel.OneTermEqualSelector("reason", operand.UpgradeEventReason),
	fieldsel.OneTermEqualSelector("involvedObject.kind", "Node")).String()
