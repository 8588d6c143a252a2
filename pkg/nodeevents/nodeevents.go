// Package nodeevents records a Kubernetes Event on a node when a finding
// starts there and when it ends, from the batches of a live tracker
// (pkg/live), beside the other exporters of its verdicts (pkg/metrics,
// pkg/reportsync).
package nodeevents

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Reasons of the Events recorded on a node.
const (
	OperandMissing = "OperandMissing" // Warning: an operand the node asks for stopped running
	OperandRunning = "OperandRunning" // Normal: it runs again, or the node no longer asks for it
	OrderViolation = "OrderViolation" // Warning: a rule of the start-up order broke
	OrderRestored  = "OrderRestored"  // Normal: the rule holds again
)

// Record makes t record a Kubernetes Event on a node when a finding starts
// there and when it ends, so that kubectl describe node shows it.
// Findings present at the first verdict are not recorded: they did not
// start then, and a restart of gpuops would record them again. client-go's
// recorder deduplicates repeated events and rate-limits each node. Events
// stop when ctx ends. Call it before t runs.
func Record(ctx context.Context, t *live.Tracker, client kubernetes.Interface) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "gpuops"})
	context.AfterFunc(ctx, b.Shutdown)
	t.Observe(live.Hooks{Judged: func(batch verdict.Batch) {
		if batch.Initial {
			return
		}
		for _, c := range batch.Changes {
			if c.After == nil {
				continue // the node is gone, and its events with it
			}
			for _, e := range eventsOf(c.Before, c.After, batch.Rules) {
				rec.Event(e.ref, e.kind, e.reason, e.message)
			}
		}
	}})
}

type nodeEvent struct {
	ref                   *corev1.ObjectReference
	kind, reason, message string
}

// eventsOf lists the events of one node's change, started findings first.
func eventsOf(before, after *verdict.Verdict, rules []operand.Rule) []nodeEvent {
	// Nodes are cluster-scoped: their events go to the default namespace,
	// and kubectl describe node finds them by kind and name (the kubelet
	// too uses the node's name as its UID).
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: after.Node, UID: types.UID(after.Node)}
	var was verdict.Verdict
	if before != nil {
		was = *before
	}
	var out []nodeEvent
	add := func(kind, reason, format string, args ...any) {
		out = append(out, nodeEvent{ref, kind, reason, fmt.Sprintf(format, args...)})
	}
	for _, o := range after.Audit.Missing {
		if !slices.Contains(was.Audit.Missing, o) {
			add(corev1.EventTypeWarning, OperandMissing, "%s is not running on the node%s", o, why(after, o))
		}
	}
	for _, f := range after.Order.Findings {
		if !slices.Contains(was.Order.Findings, f) {
			r := operand.RuleOf(rules, f)
			add(corev1.EventTypeWarning, OrderViolation, "%s: %s runs without %s", f, r.Operand, r.Needs)
		}
	}
	for _, o := range was.Audit.Missing {
		if !slices.Contains(after.Audit.Missing, o) {
			add(corev1.EventTypeNormal, OperandRunning, "%s is no longer missing", o)
		}
	}
	for _, f := range was.Order.Findings {
		if !slices.Contains(after.Order.Findings, f) {
			add(corev1.EventTypeNormal, OrderRestored, "%s: resolved", f)
		}
	}
	return out
}

// why is the reasons of a missing operand, if the verdict has them.
func why(v *verdict.Verdict, op string) string {
	for _, m := range v.Why().Missing {
		if m.Operand == op && len(m.Reasons) > 0 {
			return " (" + explain.Messages(m.Reasons) + ")"
		}
	}
	return ""
}
