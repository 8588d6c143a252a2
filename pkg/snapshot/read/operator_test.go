package read

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestPickClusterPolicy(t *testing.T) {
	body := `{"items": [
	  {"metadata": {"name": "z-spare"}, "status": {"state": "ignored"}},
	  {"metadata": {"name": "cluster-policy", "labels": {"app.kubernetes.io/version": "v25.10.1", "helm.sh/chart": "gpu-operator-v25.10.1"}},
	   "spec": {
	     "operator": {"defaultRuntime": "containerd"},
	     "driver": {"enabled": false, "useNvidiaDriverCRD": true, "version": "595.91.07"},
	     "toolkit": {"enabled": true},
	     "dcgm": {"enabled": false},
	     "gds": null,
	     "sandboxWorkloads": {"enabled": true, "mode": "kata"},
	     "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu"}]}
	   },
	   "status": {"state": "ready", "namespace": "gpu-operator"}},
	  {"metadata": {"name": "a-ignored"}, "spec": {"driver": {"enabled": true}}, "status": {"state": "ignored"}}
	]}`
	var list struct{ Items []clusterPolicy }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	got := pick(list.Items)
	want := &snapshot.ClusterPolicy{
		Name: "cluster-policy", Namespace: "gpu-operator",
		Enabled:     map[string]bool{"driver": false, "toolkit": true, "dcgm": false, "sandboxWorkloads": true},
		SandboxMode: "kata", NVIDIADriverCRD: true, ChartVersion: "v25.10.1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pick:\n got %+v\nwant %+v", got, want)
	}
	if got := pick(list.Items[:1]); got != nil {
		t.Errorf("only ignored policies: %+v, want none", got)
	}
}

func TestUpgradePolicy(t *testing.T) {
	body := `{"items": [{"metadata": {"name": "cluster-policy"},
	   "spec": {"driver": {"upgradePolicy": {"autoUpgrade": true, "maxParallelUpgrades": 0, "maxUnavailable": 2,
	     "drain": {"enable": true, "podSelector": "app=x"}, "waitForCompletion": {"podSelector": "job=y", "timeoutSeconds": 60}}}}}]}`
	var list struct{ Items []clusterPolicy }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	two := intstr.FromInt32(2)
	want := &snapshot.UpgradePolicy{AutoUpgrade: true, MaxParallelUpgrades: 0, MaxUnavailable: &two,
		WaitForCompletion: snapshot.WaitForCompletion{PodSelector: "job=y", TimeoutSeconds: 60},
		PodDeletion:       snapshot.PodDeletion{TimeoutSeconds: 300},
		Drain:             snapshot.Drain{Enable: true, PodSelector: "app=x", TimeoutSeconds: 300}}
	if got := pick(list.Items).UpgradePolicy; !reflect.DeepEqual(got, want) {
		t.Errorf("ClusterPolicy's:\n got %+v\nwant %+v", got, want)
	}

	// Left out: the CRDs' defaults; autoUpgrade's depends on the kind.
	quarter := intstr.FromString("25%")
	defaults := &snapshot.UpgradePolicy{MaxParallelUpgrades: 1, MaxUnavailable: &quarter,
		PodDeletion: snapshot.PodDeletion{TimeoutSeconds: 300}, Drain: snapshot.Drain{TimeoutSeconds: 300}}
	if got := (&upgradePolicy{}).resolve(false); !reflect.DeepEqual(got, defaults) {
		t.Errorf("empty ClusterPolicy upgradePolicy:\n got %+v\nwant %+v", got, defaults)
	}
	if got := (*upgradePolicy)(nil).resolve(false); got != nil {
		t.Errorf("ClusterPolicy without upgradePolicy: %+v, want none", got)
	}
	var d nvidiaDriver
	if err := json.Unmarshal([]byte(`{"metadata": {"name": "a100"}, "spec": {"nodeSelector": {"pool": "a100"}}}`), &d); err != nil {
		t.Fatal(err)
	}
	defaults.AutoUpgrade = true
	if got := d.Spec.UpgradePolicy.resolve(true); !reflect.DeepEqual(got, defaults) || d.Spec.NodeSelector["pool"] != "a100" {
		t.Errorf("NVIDIADriver without upgradePolicy:\n got %+v\nwant %+v", got, defaults)
	}
}

// The trimmed ControllerRevision and Event keep what the upgrades read
// takes of them, and not a revision's data (its DaemonSet's template).
func TestTrimRevisionAndEvent(t *testing.T) {
	yes := true
	rev := appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "nvidia-driver-daemonset-5f7d", Labels: map[string]string{operand.RevisionHashLabel: "5f7d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "nvidia-driver-daemonset", Controller: &yes}}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{}}}`)},
		Revision: 7,
	}
	var got appsv1.ControllerRevision
	decodeTrimmed(t, &rev, &got, revisionFields, podLabels)
	if got.Revision != 7 || got.Labels[operand.RevisionHashLabel] != "5f7d" || metav1.GetControllerOf(&got).Name != "nvidia-driver-daemonset" || got.Data.Raw != nil {
		t.Errorf("trimmed revision %+v", got)
	}

	at := metav1.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, e := range []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "gpu-1"}, Reason: operand.UpgradeEventReason, Type: "Warning", Message: "Failed to drain the node", LastTimestamp: at},
		{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "gpu-1"}, Type: "Normal", EventTime: metav1.NewMicroTime(at.Time)},
		{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "gpu-1"}, Series: &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(at.Time)}, FirstTimestamp: metav1.Unix(1, 0)},
	} {
		var got corev1.Event
		decodeTrimmed(t, &e, &got, eventFields, nil)
		if want, have := snapshot.EventFrom(&e), snapshot.EventFrom(&got); want != have || !have.Time.Equal(at.Time) || got.InvolvedObject.Name != "gpu-1" {
			t.Errorf("trimmed event %+v, want %+v at %v", have, want, at)
		}
	}
}

// Tracing a cordoned and tainted node reads who set spec.unschedulable and
// who wrote spec.taints, from protobuf bytes as from a whole node; a node
// neither cordoned nor tainted is not traced.
func TestTraceCordon(t *testing.T) {
	n := gpuNode(t, false)
	n.Spec.Unschedulable = true
	n.Spec.Taints = []corev1.Taint{{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}}
	at := metav1.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	later := metav1.Date(2026, 12, 1, 11, 5, 0, 0, time.UTC)
	n.ManagedFields = append(n.ManagedFields,
		metav1.ManagedFieldsEntry{Manager: operand.UpgradeManager, Operation: "Update", APIVersion: "v1",
			Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:unschedulable":{}}}`)}},
		metav1.ManagedFieldsEntry{Manager: "kubectl-taint", Operation: "Update", APIVersion: "v1",
			Time: &later, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:taints":{}}}`)}})
	whole, err := n.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cordon, tainter := snapshot.LabelChange{Manager: operand.UpgradeManager, Time: at.Time}, snapshot.LabelChange{Manager: "kubectl-taint", Time: later.Time}
	for _, bytes := range [][]byte{whole, nil} {
		node := snapshot.NodeFrom(n)
		if err := trace(&node, n, bytes, nil); err != nil || node.Cordon == nil || *node.Cordon != cordon || node.Tainter == nil || *node.Tainter != tainter {
			t.Errorf("traced (protobuf %v): cordon %+v, tainter %+v, %v; want %+v, %+v", bytes != nil, node.Cordon, node.Tainter, err, cordon, tainter)
		}
	}
	n.Spec.Unschedulable, n.Spec.Taints = false, nil
	node := snapshot.NodeFrom(n)
	if err := trace(&node, n, nil, nil); err != nil || node.Cordon != nil || node.Tainter != nil {
		t.Errorf("an uncordoned, untainted node traced: %+v, %+v, %v", node.Cordon, node.Tainter, err)
	}
}

// The tag of the operator's image, as the runtime reads the reference: a
// registry's port is no tag, a digest wins over a tag, none is latest.
func TestImageTag(t *testing.T) {
	for image, want := range map[string]string{
		"nvcr.io/nvidia/gpu-operator:v25.10.1":            "v25.10.1",
		"registry.local:5000/nvidia/gpu-operator:v24.9.2": "v24.9.2",
		"registry.local:5000/nvidia/gpu-operator":         "latest",
		"gpu-operator": "latest",
		"nvcr.io/nvidia/gpu-operator:v26.7.0@sha256:0123456789ab": "sha256:0123456789ab",
		"nvcr.io/nvidia/gpu-operator@sha256:0123456789ab":         "sha256:0123456789ab",
	} {
		if got := imageTag(image); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", image, got, want)
		}
	}
}
