package provision

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
)

func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Subresource: subresource,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)},
	}
}

// As the API server records a node labelled by gpuops, by kubectl and by
// its creator; the status entry touches no label.
var nodeFields = []metav1.ManagedFieldsEntry{
	entry("gpuops", "", `{"f:metadata":{"f:labels":{"f:nvidia.com/gpu.present":{},"f:nvidia.com/gpu.deploy.driver":{}}}}`),
	entry("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:nvidia.com/gpu.deploy.dcgm-exporter":{}}}}`),
	entry("kubectl-create", "", `{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/hostname":{},"f:nvidia.com/gpu.present":{}}}}`),
	entry("kwok-controller", "status", `{"f:status":{"f:phase":{}}}`),
}

// What gpuops owns on a node is what its applies set: the typed Extract
// reads it from the ownership record, leaving other managers' labels and
// the status subresource out.
func TestExtractOwnedLabels(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: nodeFields, Labels: map[string]string{
		"nvidia.com/gpu.present": "true", "nvidia.com/gpu.deploy.driver": "false",
		"nvidia.com/gpu.deploy.dcgm-exporter": "true", "kubernetes.io/hostname": "n",
	}}}
	mine, err := corev1ac.ExtractNode(node, FieldManager)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nvidia.com/gpu.deploy.driver": "false", "nvidia.com/gpu.present": "true"}
	if !maps.Equal(mine.Labels, want) {
		t.Errorf("gpuops owns %v, want %v", mine.Labels, want)
	}
	if theirs, _ := corev1ac.ExtractNode(node, "nobody"); len(theirs.Labels) != 0 {
		t.Errorf("nobody owns %v, want none", theirs.Labels)
	}
}

func TestForeignOwnersOfLabels(t *testing.T) {
	tests := []struct {
		keys []string
		want []string // Owner.String() of each
	}{
		{[]string{"nvidia.com/gpu.deploy.driver"}, nil}, // gpuops's own
		{[]string{"example.com/free"}, nil},             // nobody's
		{[]string{"nvidia.com/gpu.deploy.dcgm-exporter", "nvidia.com/gpu.present"}, []string{
			`"kubectl-create" (.metadata.labels.nvidia.com/gpu.present)`,
			`"kubectl-label" (.metadata.labels.nvidia.com/gpu.deploy.dcgm-exporter)`,
		}},
	}
	for _, tc := range tests {
		owners, err := foreignOwners(nodeFields, "gpuops", labelPaths(tc.keys))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range owners {
			got = append(got, o.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("foreignOwners(%q) = %q, want %q", tc.keys, got, tc.want)
		}
	}
}

func TestForeignOwnersOfDaemonSetIgnoreStatusAndParents(t *testing.T) {
	mineJSON := `{"f:spec":{"f:selector":{},"f:template":{"f:spec":{"f:nodeSelector":{"f:k":{}}}}}}`
	fields := []metav1.ManagedFieldsEntry{
		entry("gpuops", "", mineJSON),
		entry("kube-controller-manager", "status", `{"f:status":{"f:desiredNumberScheduled":{}}}`),
		// owns the template's annotations only: no field gpuops writes
		entry("kubectl-rollout", "", `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{".":{},"f:restartedAt":{}}}}}}`),
	}
	mine, err := owned(fields, "gpuops")
	if err != nil {
		t.Fatal(err)
	}
	if owners, _ := foreignOwners(fields, "gpuops", mine.Leaves()); len(owners) != 0 {
		t.Errorf("foreignOwners = %v, want none", owners)
	}
	fields = append(fields, entry("gpu-operator", "", `{"f:spec":{"f:template":{"f:spec":{"f:nodeSelector":{"f:k":{}}}}}}`))
	owners, _ := foreignOwners(fields, "gpuops", mine.Leaves())
	if len(owners) != 1 || owners[0].Manager != "gpu-operator" {
		t.Errorf("foreignOwners = %v, want gpu-operator", owners)
	}
	if got := otherManagers(fields); !slices.Equal(got, []string{"gpu-operator", "kubectl-rollout"}) {
		t.Errorf("otherManagers = %q, want gpu-operator and kubectl-rollout (not the status writer)", got)
	}
}

func TestForeignOwnerError(t *testing.T) {
	err := &ForeignOwnerError{Object: "node/n1 labels", Owners: []Owner{{Manager: "kubectl-label", Fields: []string{".metadata.labels.a"}}}}
	want := `node/n1 labels: owned by "kubectl-label" (.metadata.labels.a); not changed (--force takes it over)`
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestRosterText(t *testing.T) {
	// docs/lab.md step 1, byte for byte
	want := "driver=nvidia.com/gpu.deploy.driver\n" +
		"container-toolkit=nvidia.com/gpu.deploy.container-toolkit\n" +
		"device-plugin=nvidia.com/gpu.deploy.device-plugin\n" +
		"gpu-feature-discovery=nvidia.com/gpu.deploy.gpu-feature-discovery\n" +
		"dcgm-exporter=nvidia.com/gpu.deploy.dcgm-exporter\n"
	if got := string(RosterText(operand.Lab)); got != want {
		t.Errorf("RosterText =\n%s\nwant\n%s", got, want)
	}
}

func TestDriverAndOptOutText(t *testing.T) {
	if got, want := string(DriverText("1", []string{"n1"})), "DESIRED=1\nSKIPPED=n1\n"; got != want {
		t.Errorf("DriverText = %q, want %q", got, want)
	}
	if got, want := string(DriverText("2", []string{"n1", "n3"})), "DESIRED=2\nSKIPPED=n1,n3\n"; got != want {
		t.Errorf("DriverText = %q, want %q", got, want)
	}
	if got, want := string(DriverText("2", nil)), "DESIRED=2\nSKIPPED=\n"; got != want {
		t.Errorf("DriverText = %q, want %q", got, want)
	}
	if got, want := string(OptOutText(plan.Count{Before: "2", After: "1"})), "BEFORE=2\nAFTER=1\n"; got != want {
		t.Errorf("OptOutText = %q, want %q", got, want)
	}
}
