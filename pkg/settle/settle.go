// Package settle tells when DaemonSets have settled: the controller has seen
// their latest spec and exactly the nodes they admit run one Running pod each.
// Check judges the objects, pure; Wait drives it from watches.
package settle

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/daemonset"
)

// Status is how far one DaemonSet is from settled.
type Status struct {
	Name    string
	Desired int // nodes that must run a pod, computed from the node list
	Ready   int // of those, nodes where exactly one Running pod of the DaemonSet stands
	// Lagging says why the DaemonSet's own status is not current yet; empty when it is.
	Lagging string
	// Waiting lists, node by node (sorted by name), what is still wrong there.
	Waiting []string
	// Stranded lists the DaemonSet's pods that were never scheduled and wait
	// for a node that no longer admits the DaemonSet (or is gone), sorted by
	// node: nothing will run them there, and only the DaemonSet controller's
	// next full sync of the DaemonSet removes them (see StuckError).
	Stranded []PodOnNode

	observed bool // the controller has seen the DaemonSet's generation
}

// PodOnNode names a pod and the node it is meant for.
type PodOnNode struct{ Pod, Node string }

// Settled reports whether nothing is left to wait for.
func (s Status) Settled() bool { return s.Lagging == "" && len(s.Waiting) == 0 && len(s.Stranded) == 0 }

// Stuck reports whether only stranded pods keep the DaemonSet from settling,
// and the status lag they cause: the controller has seen the DaemonSet's
// generation, so no sync of it is due.
func (s Status) Stuck() bool { return len(s.Stranded) > 0 && len(s.Waiting) == 0 && s.observed }

// String is the one-line account used in progress and timeout messages.
func (s Status) String() string {
	parts := []string{fmt.Sprintf("%s %d/%d", s.Name, s.Ready, s.Desired)}
	if s.Lagging != "" {
		parts = append(parts, s.Lagging)
	}
	waiting := s.Waiting
	for _, p := range s.Stranded {
		waiting = append(waiting, p.Node+" pod "+p.Pod+" never scheduled, left behind")
	}
	if len(waiting) > 0 {
		parts = append(parts, strings.Join(waiting, ", "))
	}
	return strings.Join(parts, ": ")
}

// Check judges one DaemonSet against the nodes of the cluster and the pods of
// its namespace. It is settled when:
//   - the controller has observed its generation, its desiredNumberScheduled
//     equals the number of nodes that its node selector, affinity and
//     tolerations admit, and its status counts that many pods scheduled,
//     updated (as `kubectl rollout status` checks), ready and available, and
//     no pod misscheduled but those that may stay;
//   - each admitted node has exactly one pod of the DaemonSet, Running and not
//     being deleted;
//   - no other node has a pod of it, except a node the pod may stay on (see
//     Admits).
//
// A pod that was never scheduled, meant for a node that does not admit the
// DaemonSet (or is gone), is Stranded rather than Waiting: see StuckError.
func Check(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod) Status {
	st := Status{Name: ds.Name}
	admit := daemonset.NewAdmission(ds.Spec.Template.Spec)
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if metav1.IsControlledBy(p, ds) {
			byNode[daemonset.NodeOf(p)] = append(byNode[daemonset.NodeOf(p)], p)
		}
	}
	var waiting []nodeNote
	staying := 0
	for _, n := range nodes {
		dec := admit.Decide(n)
		run, stay := dec.Run, dec.Stay
		here := byNode[n.Name]
		delete(byNode, n.Name)
		if !run {
			here = strand(&st, n.Name, here)
		}
		switch {
		case run:
			st.Desired++
			if note := onlyRunning(here); note != "" {
				waiting = append(waiting, nodeNote{n.Name, note})
			} else {
				st.Ready++
			}
		case stay && (len(here) == 0 || onlyRunning(here) == ""):
			// a pod that tolerates the node's NoExecute taints may stay, or
			// go; the controller counts one that stays as misscheduled
			staying += len(here)
		case len(here) > 0:
			waiting = append(waiting, nodeNote{n.Name, fmt.Sprintf("%d pod(s) not yet removed", len(here))})
		}
	}
	for node, here := range byNode { // pods bound to no node, or to a node that is gone
		name := node
		if name == "" {
			name = "(unscheduled)"
		} else if here = strand(&st, node, here); len(here) == 0 {
			continue
		}
		waiting = append(waiting, nodeNote{name, fmt.Sprintf("%d pod(s) not on an admitted node", len(here))})
	}
	slices.SortFunc(waiting, func(a, b nodeNote) int { return strings.Compare(a.node, b.node) })
	for _, w := range waiting {
		st.Waiting = append(st.Waiting, w.node+" "+w.note)
	}
	slices.SortFunc(st.Stranded, func(a, b PodOnNode) int { return strings.Compare(a.Node+"/"+a.Pod, b.Node+"/"+b.Pod) })
	st.Lagging = lagging(ds, st.Desired, staying)
	st.observed = ds.Status.ObservedGeneration >= ds.Generation
	return st
}

// strand moves the pods meant for node, which does not admit the DaemonSet,
// that were never scheduled (and are not being deleted) to st.Stranded; it
// returns the others. The scheduler will never bind such a pod there, and the
// DaemonSet controller (Kubernetes 1.37) does not remove it when the node
// stops admitting the DaemonSet: on a node change it looks only at the pods
// bound to the node.
func strand(st *Status, node string, here []*corev1.Pod) []*corev1.Pod {
	var kept []*corev1.Pod
	for _, p := range here {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			st.Stranded = append(st.Stranded, PodOnNode{Pod: p.Name, Node: node})
		} else {
			kept = append(kept, p)
		}
	}
	return kept
}

type nodeNote struct{ node, note string }

// onlyRunning says what keeps a node that must run the DaemonSet from being
// settled: it needs exactly one pod, Running and not being deleted.
func onlyRunning(here []*corev1.Pod) string {
	switch {
	case len(here) == 0:
		return "no pod"
	case len(here) > 1:
		return fmt.Sprintf("%d pods", len(here))
	case here[0].DeletionTimestamp != nil:
		return "pod being deleted"
	case here[0].Spec.NodeName == "":
		return "pod not scheduled"
	case here[0].Status.Phase != corev1.PodRunning:
		return "pod " + strings.ToLower(string(here[0].Status.Phase))
	}
	return ""
}

func lagging(ds *appsv1.DaemonSet, desired, misscheduled int) string {
	s := ds.Status
	switch {
	case s.ObservedGeneration < ds.Generation:
		return fmt.Sprintf("generation %d not observed yet", ds.Generation)
	case int(s.DesiredNumberScheduled) != desired:
		return fmt.Sprintf("status says %d desired", s.DesiredNumberScheduled)
	case s.UpdatedNumberScheduled != s.DesiredNumberScheduled:
		return fmt.Sprintf("%d of %d updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.CurrentNumberScheduled != s.DesiredNumberScheduled || int(s.NumberMisscheduled) != misscheduled ||
		s.NumberReady != s.DesiredNumberScheduled || s.NumberAvailable != s.DesiredNumberScheduled:
		// The pods are there; the controller has yet to count them. Waiting
		// for it leaves a status that no longer changes, so what is read
		// next (and a second up) sees a still object.
		return fmt.Sprintf("status counts %d scheduled, %d misscheduled, %d ready, %d available",
			s.CurrentNumberScheduled, s.NumberMisscheduled, s.NumberReady, s.NumberAvailable)
	}
	return ""
}
