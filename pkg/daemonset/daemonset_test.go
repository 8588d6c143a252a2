package daemonset_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/daemonset"
)

func TestDecide(t *testing.T) {
	spec := corev1.PodSpec{
		NodeSelector: map[string]string{"gpu": "true"},
		Tolerations:  []corev1.Toleration{{Key: "ok", Operator: corev1.TolerationOpExists}},
	}
	node := func(labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	gpu := map[string]string{"gpu": "true"}
	for _, tc := range []struct {
		name        string
		node        *corev1.Node
		run, stay   bool
		notSelected bool
		taint       string
	}{
		{"selected", node(gpu), true, true, false, ""},
		{"not selected", node(map[string]string{"gpu": "false"}), false, false, true, ""},
		{"tolerated taint", node(gpu, corev1.Taint{Key: "ok", Effect: corev1.TaintEffectNoExecute}), true, true, false, ""},
		{"cordoned: the controller's default toleration", node(gpu, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), true, true, false, ""},
		{"NoSchedule keeps new pods away, a running one stays", node(gpu, corev1.Taint{Key: "x", Value: "y", Effect: corev1.TaintEffectNoSchedule}), false, true, false, "x=y:NoSchedule"},
		{"NoExecute evicts", node(gpu, corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoExecute}), false, false, false, "x:NoExecute"},
		{"PreferNoSchedule is no bar", node(gpu, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), true, true, false, ""},
	} {
		d := daemonset.NewAdmission(spec).Decide(tc.node)
		taint := ""
		if d.Taint != nil {
			taint = d.Taint.ToString()
		}
		if d.Run != tc.run || d.Stay != tc.stay || d.NotSelected != tc.notSelected || taint != tc.taint {
			t.Errorf("%s: got %+v (taint %q)", tc.name, d, taint)
		}
	}
}

func TestPodFacts(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "dp", UID: "u1"}}
	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}},
		}}},
	}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet")),
	}}, Spec: corev1.PodSpec{Affinity: pinned}}
	if got := daemonset.Controller(pod); got != "dp" {
		t.Errorf("Controller = %q, want dp", got)
	}
	if got := daemonset.NodeOf(pod); got != "node-a" {
		t.Errorf("NodeOf an unbound pod = %q, want its target node-a", got)
	}
	pod.Spec.NodeName = "node-b"
	if got, target := daemonset.NodeOf(pod), daemonset.TargetNode(pod); got != "node-b" || target != "node-a" {
		t.Errorf("bound pod: NodeOf = %q, TargetNode = %q", got, target)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: new(bool)},
	}}}
	*other.OwnerReferences[0].Controller = true
	if got := daemonset.Controller(other); got != "" || daemonset.TargetNode(other) != "" {
		t.Errorf("a ReplicaSet's pod: Controller = %q", got)
	}
}

// SelectorLabels names every label key placement reads, nodeSelector and
// required affinity alike, once each; not matchFields (the node's name) nor
// preferred affinity (it never keeps a pod away).
func TestSelectorLabels(t *testing.T) {
	req := func(key string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpExists}
	}
	spec := corev1.PodSpec{
		NodeSelector: map[string]string{"nvidia.com/gpu.deploy.driver": "true", "b": "x"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{req("a"), req("b")}, MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name")}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{req("c")}},
			}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("preferred")}}}},
		}},
	}
	got := daemonset.SelectorLabels(spec)
	if want := []string{"a", "b", "c", "nvidia.com/gpu.deploy.driver"}; !slices.Equal(got, want) {
		t.Errorf("SelectorLabels = %v, want %v", got, want)
	}
	if got := daemonset.SelectorLabels(corev1.PodSpec{}); len(got) != 0 {
		t.Errorf("no selector: %v", got)
	}
}
