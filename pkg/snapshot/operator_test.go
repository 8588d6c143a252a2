package snapshot

import (
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLabelChangesFrom(t *testing.T) {
	at := func(min int) *metav1.Time {
		tm := metav1.NewTime(time.Date(2026, 8, 21, 10, min, 0, 0, time.UTC))
		return &tm
	}
	labels := func(keys ...string) *metav1.FieldsV1 {
		s := `{"f:metadata":{"f:labels":{`
		for i, k := range keys {
			if i > 0 {
				s += ","
			}
			s += `"f:` + k + `":{}`
		}
		return &metav1.FieldsV1{Raw: []byte(s + `}}}`)}
	}
	const dp, tk, dr = "nvidia.com/gpu.deploy.device-plugin", "nvidia.com/gpu.deploy.container-toolkit", "nvidia.com/gpu.deploy.driver"
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "gpu-operator", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(1), FieldsV1: labels(dr)},
		{Manager: "driver-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(5), FieldsV1: labels(dp, tk)},
		{Manager: "shared", Operation: metav1.ManagedFieldsOperationApply, Time: at(7), FieldsV1: labels(tk)},
		{Manager: "kubelet", Subresource: "status", Time: at(9), FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
		{Manager: "broken", Time: at(9), FieldsV1: &metav1.FieldsV1{Raw: []byte(`{`)}},
		{Manager: "timeless", FieldsV1: labels(dr)},
	}
	got := LabelChangesFrom(entries, []string{dp, tk, dr, "nvidia.com/gpu.deploy.dcgm"})
	want := map[string]LabelChange{
		dr: {"gpu-operator", at(1).Time},
		dp: {"driver-manager", at(5).Time},
		tk: {"shared", at(7).Time}, // owned twice: the later write
	}
	if !maps.Equal(got, want) {
		t.Errorf("LabelChangesFrom:\n got %v\nwant %v", got, want)
	}
}
