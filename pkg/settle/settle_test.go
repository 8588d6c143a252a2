package settle

import (
	"bytes"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const key = "example.com/run"

func daemonSet(desired int32, mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns", UID: "ds-uid", Generation: 2},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{key: "true"},
		}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: desired, UpdatedNumberScheduled: desired,
			CurrentNumberScheduled: desired, NumberReady: desired, NumberAvailable: desired},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func node(name, value string, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: corev1.NodeSpec{Taints: taints}}
	if value != "" {
		n.Labels[key] = value
	}
	return n
}

func pod(nodeName string, phase corev1.PodPhase, mutate ...func(*corev1.Pod)) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + nodeName, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: &yes},
		}},
		Spec:   corev1.PodSpec{NodeName: nodeName},
		Status: corev1.PodStatus{Phase: phase},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func deleting(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }

func ownedByOld(p *corev1.Pod) { p.OwnerReferences[0].UID = types.UID("old-uid") }

// pinnedTo gives the pod the node affinity the DaemonSet controller sets.
func pinnedTo(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
	}
}

func taint(k string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: k, Effect: effect}
}

func TestCheck(t *testing.T) {
	running := corev1.PodRunning
	twoNodes := []*corev1.Node{node("a", "true"), node("b", "true"), node("c", "false"), node("d", "")}
	tests := []struct {
		name     string
		ds       *appsv1.DaemonSet
		nodes    []*corev1.Node
		pods     []*corev1.Pod
		settled  bool
		desired  int
		ready    int
		lagging  string
		waiting  []string
		stranded []PodOnNode
		stuck    bool
	}{
		{
			name: "settled", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			settled: true, desired: 2, ready: 2,
		},
		{
			name: "a pod still Pending", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", corev1.PodPending)},
			desired: 2, ready: 1, waiting: []string{"b pod pending"},
		},
		{
			name: "a pod missing", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("b", running)},
			desired: 2, ready: 1, waiting: []string{"a no pod"},
		},
		{
			name: "the pod on an admitted node is being deleted", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running, deleting), pod("b", running)},
			desired: 2, ready: 1, waiting: []string{"a pod being deleted"},
		},
		{
			name: "an old pod beside the new one", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("a", running, deleting), pod("b", running)},
			desired: 2, ready: 1, waiting: []string{"a 2 pods"},
		},
		{
			name: "opted-out node still has its pod, being deleted", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("c", running, deleting)},
			desired: 2, ready: 2, waiting: []string{"c 1 pod(s) not yet removed"},
		},
		{
			name: "pods of a deleted DaemonSet of the same name do not count", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running, ownedByOld), pod("b", running), pod("c", running, ownedByOld)},
			desired: 2, ready: 1, waiting: []string{"a no pod"},
		},
		{
			name: "a pod the scheduler has not bound yet counts on the node it is pinned to", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("", corev1.PodPending, pinnedTo("b"))},
			desired: 2, ready: 1, waiting: []string{"b pod not scheduled"},
		},
		{
			name: "pod bound to no node", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("", corev1.PodPending)},
			desired: 2, ready: 2, waiting: []string{"(unscheduled) 1 pod(s) not on an admitted node"},
		},
		{
			name: "a pod never scheduled, meant for a node that no longer admits the DaemonSet, is stranded", ds: daemonSet(3), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("", corev1.PodPending, pinnedTo("c"))},
			desired: 2, ready: 2, lagging: "status says 3 desired",
			stranded: []PodOnNode{{Pod: "p-", Node: "c"}}, stuck: true,
		},
		{
			name: "a pod never scheduled, meant for a node that is gone, is stranded", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("", corev1.PodPending, pinnedTo("gone"))},
			desired: 2, ready: 2,
			stranded: []PodOnNode{{Pod: "p-", Node: "gone"}}, stuck: true,
		},
		{
			name: "a stranded pod being deleted is on its way out", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("", corev1.PodPending, pinnedTo("c"), deleting)},
			desired: 2, ready: 2, waiting: []string{"c 1 pod(s) not yet removed"},
		},
		{
			name: "a stranded pod while other nodes still wait is not stuck", ds: daemonSet(2), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("", corev1.PodPending, pinnedTo("c"))},
			desired: 2, ready: 1, waiting: []string{"b no pod"},
			stranded: []PodOnNode{{Pod: "p-", Node: "c"}},
		},
		{
			name: "a stranded pod while the controller has a generation to see is not stuck",
			ds:   daemonSet(2, func(ds *appsv1.DaemonSet) { ds.Status.ObservedGeneration = 1 }), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("", corev1.PodPending, pinnedTo("c"))},
			desired: 2, ready: 2, lagging: "generation 2 not observed yet",
			stranded: []PodOnNode{{Pod: "p-", Node: "c"}},
		},
		{
			name: "status still counts the old desired number", ds: daemonSet(3), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			desired: 2, ready: 2, lagging: "status says 3 desired",
		},
		{
			name: "generation not observed",
			ds:   daemonSet(2, func(ds *appsv1.DaemonSet) { ds.Status.ObservedGeneration = 1 }), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			desired: 2, ready: 2, lagging: "generation 2 not observed yet",
		},
		{
			name: "rollout not finished",
			ds:   daemonSet(2, func(ds *appsv1.DaemonSet) { ds.Status.UpdatedNumberScheduled = 1 }), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			desired: 2, ready: 2, lagging: "1 of 2 updated",
		},
		{
			name: "status has not counted the ready pods yet",
			ds:   daemonSet(2, func(ds *appsv1.DaemonSet) { ds.Status.NumberReady, ds.Status.NumberAvailable = 1, 0 }), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			desired: 2, ready: 2, lagging: "status counts 2 scheduled, 0 misscheduled, 1 ready, 0 available",
		},
		{
			name: "status still counts a misscheduled pod",
			ds:   daemonSet(2, func(ds *appsv1.DaemonSet) { ds.Status.NumberMisscheduled = 1 }), nodes: twoNodes,
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			desired: 2, ready: 2, lagging: "status counts 2 scheduled, 1 misscheduled, 2 ready, 2 available",
		},
		{
			name:    "untolerated NoSchedule taint keeps a node out",
			ds:      daemonSet(1),
			nodes:   []*corev1.Node{node("a", "true"), node("b", "true", taint("gpu", corev1.TaintEffectNoSchedule))},
			pods:    []*corev1.Pod{pod("a", running)},
			settled: true, desired: 1, ready: 1,
		},
		{
			name:    "a pod may stay on a node tainted NoSchedule after it started",
			ds:      daemonSet(1, func(ds *appsv1.DaemonSet) { ds.Status.NumberMisscheduled = 1 }),
			nodes:   []*corev1.Node{node("a", "true"), node("b", "true", taint("gpu", corev1.TaintEffectNoSchedule))},
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			settled: true, desired: 1, ready: 1,
		},
		{
			name:    "untolerated NoExecute taint: the pod must go",
			ds:      daemonSet(1),
			nodes:   []*corev1.Node{node("a", "true"), node("b", "true", taint("gpu", corev1.TaintEffectNoExecute))},
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			desired: 1, ready: 1, waiting: []string{"b 1 pod(s) not yet removed"},
		},
		{
			name:    "PreferNoSchedule does not keep a node out",
			ds:      daemonSet(2),
			nodes:   []*corev1.Node{node("a", "true"), node("b", "true", taint("gpu", corev1.TaintEffectPreferNoSchedule))},
			pods:    []*corev1.Pod{pod("a", running)},
			desired: 2, ready: 1, waiting: []string{"b no pod"},
		},
		{
			name: "a template toleration admits the tainted node",
			ds: daemonSet(2, func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
			}),
			nodes:   []*corev1.Node{node("a", "true"), node("b", "true", taint("gpu", corev1.TaintEffectNoSchedule))},
			pods:    []*corev1.Pod{pod("a", running), pod("b", running)},
			settled: true, desired: 2, ready: 2,
		},
		{
			name: "daemon pods tolerate cordons, not-ready and pressure taints by default",
			ds:   daemonSet(3),
			nodes: []*corev1.Node{
				node("a", "true", taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)),
				node("b", "true", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)),
				node("c", "true", taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)),
				node("d", "true", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)),
			},
			pods:    []*corev1.Pod{pod("a", running), pod("b", running), pod("c", running)},
			settled: true, desired: 3, ready: 3,
		},
		{
			name: "host-network daemon pods tolerate network-unavailable too",
			ds: daemonSet(1, func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.HostNetwork = true
				ds.Spec.Template.Spec.NodeSelector = nil
			}),
			nodes:   []*corev1.Node{node("d", "", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))},
			pods:    []*corev1.Pod{pod("d", running)},
			settled: true, desired: 1, ready: 1,
		},
		{
			name: "required node affinity narrows the nodes",
			ds: daemonSet(1, func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}},
					}}},
				}}
			}),
			nodes:   twoNodes,
			pods:    []*corev1.Pod{pod("b", running)},
			settled: true, desired: 1, ready: 1,
		},
		{
			name: "no node admitted, nothing to wait for", ds: daemonSet(0),
			nodes:   []*corev1.Node{node("c", "false"), node("d", "")},
			settled: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := Check(tc.ds, tc.nodes, tc.pods)
			if st.Settled() != tc.settled || st.Desired != tc.desired || st.Ready != tc.ready ||
				st.Lagging != tc.lagging || !slices.Equal(st.Waiting, tc.waiting) ||
				!slices.Equal(st.Stranded, tc.stranded) || st.Stuck() != tc.stuck {
				t.Errorf("Check = %+v (settled %v, stuck %v)\nwant settled %v desired %d ready %d lagging %q waiting %q stranded %v stuck %v",
					st, st.Settled(), st.Stuck(), tc.settled, tc.desired, tc.ready, tc.lagging, tc.waiting, tc.stranded, tc.stuck)
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	st := Status{Name: "ds", Desired: 2, Ready: 1, Lagging: "status says 3 desired", Waiting: []string{"a no pod", "c 1 pod(s) not yet removed"}}
	want := "ds 1/2: status says 3 desired: a no pod, c 1 pod(s) not yet removed"
	if got := st.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	err := &TimeoutError{After: 2e9, Unsettled: []Status{st}}
	if got, want := err.Error(), "not settled after 2s: DaemonSet "+want; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestStuckError(t *testing.T) {
	st := Status{Name: "ds", Desired: 1, Ready: 1, Stranded: []PodOnNode{{Pod: "ds-x1", Node: "c"}}}
	if got, want := st.String(), "ds 1/1: c pod ds-x1 never scheduled, left behind"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	err := &StuckError{Namespace: "ns", Stuck: []Status{st}}
	want := "will not settle: DaemonSet ds: pod ds-x1 was never scheduled and node c no longer admits it; " +
		"the DaemonSet controller removes such a pod only when it next syncs the DaemonSet, which a node change does not start: " +
		"delete it (kubectl -n ns delete pod ds-x1)"
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestProgressPrintsChangesOnly(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out)
	waiting := []Status{{Name: "a", Desired: 2, Ready: 1, Waiting: []string{"x no pod"}}, {Name: "b", Desired: 1, Ready: 1}}
	p.report(waiting)
	p.report(waiting) // nothing changed: nothing printed
	p.report([]Status{{Name: "a", Desired: 2, Ready: 2}, {Name: "b", Desired: 1, Ready: 1}})
	want := "a 1/2 ready\nb 1/1 ready, settled\na 2/2 ready, settled\n"
	if out.String() != want {
		t.Errorf("progress printed %q, want %q", out.String(), want)
	}

	out.Reset()
	p = newProgress(&out)
	p.report([]Status{{Name: "a", Desired: 2, Ready: 2}})
	if out.Len() != 0 {
		t.Errorf("already settled at the first look: printed %q, want nothing", out.String())
	}
}
