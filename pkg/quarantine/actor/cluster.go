package actor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/quarantine"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The mechanism is a cordon with a record, never a taint of gpuops's own.
// A cordon keeps new pods off the node, and DaemonSet pods tolerate
// node.kubernetes.io/unschedulable by default (the DaemonSet controller
// adds the toleration to every daemon pod: kubernetes/kubernetes
// pkg/controller/daemon, util AddOrUpdateDaemonPodTolerations), so the
// operand that is missing can still be created there and the node can heal.
// A NoSchedule taint of gpuops's would keep that operand off too, unless
// every operand DaemonSet of the install tolerated it, and the quarantine
// would hold the node broken. The record (operand.QuarantineAnnotation:
// cause and since) says the cordon is gpuops's, so that a restarted serve
// finds what it holds and gpuops lifts only what it put.

// Reasons of the Events gpuops records on a node it quarantines or
// releases.
const (
	Quarantined = "GpuopsQuarantined"
	Released    = "GpuopsReleased"
)

// Needs are the rights --quarantine=on needs: patch nodes (the cordon and
// the record), a Lease (one actor among the replicas) and the fuse's
// ConfigMap in the namespace, and Events on nodes (namespace default).
// kustomize/deploy/quarantine grants them.
func Needs(namespace string) []access.Need {
	return []access.Need{
		{Verbs: []string{"get", "patch"}, Resource: "nodes"},
		{Verbs: []string{"get", "create", "update"}, Group: "coordination.k8s.io", Resource: "leases", Namespace: namespace},
		{Verbs: []string{"get", "create", "update", "delete"}, Resource: "configmaps", Namespace: namespace},
		{Verbs: []string{"create"}, Resource: "events", Namespace: metav1.NamespaceDefault},
	}
}

// cluster carries out the decisions on the cluster: each write is made
// against the node as it is now (read again, and sent with its
// resourceVersion), never against the verdict's view of it.
type cluster struct {
	client    kubernetes.Interface
	namespace string
}

// fresh reads the node and what the ledger says of it now.
func (c cluster) fresh(ctx context.Context, name string) (*corev1.Node, *snapshot.Node, error) {
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	s := snapshot.NodeFrom(n)
	s.TraceSpec(n.ManagedFields)
	return n, &s, nil
}

// errChanged: the node is not as the decision saw it; nothing was done.
var errChanged = errors.New("changed since the verdict")

// quarantine cordons the node with gpuops's record, if it is still in
// service, not in a driver upgrade and not marked by anyone.
func (c cluster) quarantine(ctx context.Context, a quarantine.Action, now time.Time) error {
	n, s, err := c.fresh(ctx, a.Node)
	if err != nil {
		return err
	}
	if e := ledger.Of(s); e != nil {
		return fmt.Errorf("%w: %s", errChanged, e)
	}
	if m := ledger.MarksOf(s); m.Other != "" || m.Recorded || (quarantine.Node{UpgradeState: s.Labels[operand.UpgradeStateLabel]}).InUpgrade() {
		return fmt.Errorf("%w: marked by %s or in a driver upgrade", errChanged, m.Other)
	}
	rec := ledger.Record{Code: a.Code, Operand: a.Operand, Since: now}
	if err := c.patch(ctx, n, map[string]any{operand.QuarantineAnnotation: rec.Format()}, ptr(true)); err != nil {
		return err
	}
	c.event(ctx, n, corev1.EventTypeWarning, Quarantined, "cordoned by gpuops: unusable ("+rec.CauseString()+"); lifted once usable again")
	return nil
}

// release takes gpuops's record off the node and, when uncordon, its
// cordon, if gpuops's quarantine still holds it; forget takes off a stale
// record alone.
func (c cluster) release(ctx context.Context, r quarantine.Release) error {
	n, s, err := c.fresh(ctx, r.Node)
	if err != nil {
		return err
	}
	e := ledger.Of(s)
	if e == nil || e.Actor != ledger.Gpuops {
		return fmt.Errorf("%w: no longer gpuops's", errChanged)
	}
	uncordon := r.Uncordon && ledger.MarksOf(s).Other == ""
	var unschedulable *bool // the cordon stays, and stays gpuops's for the ledger until then
	if uncordon {
		unschedulable = ptr(false)
	}
	if err := c.patch(ctx, n, map[string]any{operand.QuarantineAnnotation: nil}, unschedulable); err != nil {
		return err
	}
	msg := "uncordoned by gpuops: usable again"
	if !uncordon {
		msg = "gpuops's quarantine lifted; the cordon stays for " + ledger.MarksOf(s).Other
	}
	c.event(ctx, n, corev1.EventTypeNormal, Released, msg)
	return nil
}

func (c cluster) forget(ctx context.Context, name string) error {
	n, s, err := c.fresh(ctx, name)
	if err != nil {
		return err
	}
	if e := ledger.Of(s); !ledger.MarksOf(s).Recorded || e != nil && e.Actor == ledger.Gpuops {
		return fmt.Errorf("%w: no stale record", errChanged)
	}
	return c.patch(ctx, n, map[string]any{operand.QuarantineAnnotation: nil}, nil)
}

// patch sets the node's annotations (nil removes one) and, unless nil,
// spec.unschedulable, under gpuops's quarantine field manager, if the
// node's resourceVersion is still the one read. A cordon left alone is not
// sent: the write would make gpuops its manager.
func (c cluster) patch(ctx context.Context, n *corev1.Node, annotations map[string]any, unschedulable *bool) error {
	p := map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion, "annotations": annotations}}
	if unschedulable != nil {
		p["spec"] = map[string]any{"unschedulable": *unschedulable}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{FieldManager: operand.QuarantineManager})
	return err
}

func ptr[T any](v T) *T { return &v }

// event records an Event on the node, in namespace default, where the API
// server takes the Events of cluster-scoped objects (and kubectl describe
// node finds them).
func (c cluster) event(ctx context.Context, n *corev1.Node, kind, reason, message string) {
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: n.Name + ".", Namespace: metav1.NamespaceDefault},
		// A node's UID in its Events is its name, as the kubelet's.
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: types.UID(n.Name)},
		Reason:         reason, Message: message, Type: kind, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "gpuops"},
	}
	_, _ = c.client.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, e, metav1.CreateOptions{}) // an Event is best effort
}

// The fuse's ConfigMap keys.
const (
	fuseSince  = "since"
	fuseReason = "reason"
)

// Fuse reads the fuse: tripped while its ConfigMap exists.
func Fuse(ctx context.Context, client kubernetes.Interface, namespace string) (quarantine.Fuse, error) {
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, operand.QuarantineFuseConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return quarantine.Fuse{}, nil
	case err != nil:
		return quarantine.Fuse{}, err
	}
	since, _ := time.Parse(time.RFC3339, cm.Data[fuseSince])
	return quarantine.Fuse{Tripped: true, Since: since, Reason: cm.Data[fuseReason]}, nil
}

// trip trips the fuse: its ConfigMap, created (tripped already: kept).
func (c cluster) trip(ctx context.Context, reason string, now time.Time) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: operand.QuarantineFuseConfigMap, Namespace: c.namespace},
		Data: map[string]string{fuseSince: now.UTC().Format(time.RFC3339), fuseReason: reason}}
	_, err := c.client.CoreV1().ConfigMaps(c.namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: operand.QuarantineManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Reset resets the fuse; false when it was not tripped.
func Reset(ctx context.Context, client kubernetes.Interface, namespace string) (bool, error) {
	err := client.CoreV1().ConfigMaps(namespace).Delete(ctx, operand.QuarantineFuseConfigMap, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// ReleaseNode lifts gpuops's quarantine of one node, for a person: its
// record and its cordon (kept when another actor has marked the node).
// A node gpuops does not hold is refused with who does.
func ReleaseNode(ctx context.Context, client kubernetes.Interface, namespace, name string) error {
	c := cluster{client: client, namespace: namespace}
	_, s, err := c.fresh(ctx, name)
	if err != nil {
		return err
	}
	if e := ledger.Of(s); e == nil || e.Actor != ledger.Gpuops {
		what := "in service"
		if e != nil {
			what = e.String()
		}
		return fmt.Errorf("node %s is not quarantined by gpuops (%s): nothing to release", name, what)
	}
	return c.release(ctx, quarantine.Release{Node: name, Uncordon: true})
}

// Status reads the fuse and every node gpuops's quarantine holds, from the
// cluster (one GET, one LIST).
func Status(ctx context.Context, client kubernetes.Interface, namespace string) (quarantine.State, error) {
	fuse, err := Fuse(ctx, client, namespace)
	if err != nil {
		return quarantine.State{}, fmt.Errorf("read the fuse: %w", err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return quarantine.State{}, fmt.Errorf("list nodes: %w", err)
	}
	st := quarantine.State{Fuse: fuse, Nodes: []quarantine.Held{}}
	for i := range nodes.Items {
		s := snapshot.NodeFrom(&nodes.Items[i])
		s.TraceSpec(nodes.Items[i].ManagedFields)
		if e := ledger.Of(&s); e != nil && e.Actor == ledger.Gpuops {
			st.Nodes = append(st.Nodes, quarantine.Held{Node: s.Name, Cause: e.Cause, Since: *e.Since})
		}
	}
	return st, nil
}
