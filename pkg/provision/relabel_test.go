package provision

import (
	"errors"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/plan"
)

// Each step applies what gpuops owns already plus the plan's labels so far:
// server-side apply would remove a label that a later apply left out.
func TestNodeWritesCarryEarlierSteps(t *testing.T) {
	const (
		driver  = "nvidia.com/gpu.deploy.driver"
		present = "nvidia.com/gpu.present"
		plugin  = "nvidia.com/gpu.deploy.device-plugin"
		toolkit = "nvidia.com/gpu.deploy.container-toolkit"
		dcgm    = "nvidia.com/gpu.deploy.dcgm-exporter"
	)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "n", ResourceVersion: "7", ManagedFields: nodeFields,
		Labels: map[string]string{driver: "true", present: "true", dcgm: "true", plugin: "true", toolkit: "true"},
	}}
	p := &plan.Plan{Steps: []plan.Step{
		{Nodes: []plan.NodeLabels{{Node: "n", Labels: map[string]string{plugin: "false"}}}},
		{Nodes: []plan.NodeLabels{{Node: "n", Labels: map[string]string{toolkit: "false"}}}},
	}}
	writes, err := nodeWrites(map[string]*corev1.Node{"n": node}, p, false)
	if err != nil {
		t.Fatal(err)
	}
	w := writes["n"]
	want := []map[string]string{
		{driver: "true", present: "true", plugin: "false"},
		{driver: "true", present: "true", plugin: "false", toolkit: "false"},
	}
	if !slices.EqualFunc(w.labels, want, maps.Equal) || w.resourceVersion != "7" {
		t.Errorf("applies %v (resourceVersion %s), want %v", w.labels, w.resourceVersion, want)
	}

	// A label another manager owns is refused, unless forced.
	p.Steps[1].Nodes[0].Labels = map[string]string{dcgm: "false"}
	var foreign *ForeignOwnerError
	if _, err := nodeWrites(map[string]*corev1.Node{"n": node}, p, false); !errors.As(err, &foreign) {
		t.Errorf("dcgm-exporter's label is kubectl's: %v, want a ForeignOwnerError", err)
	}
	if _, err := nodeWrites(map[string]*corev1.Node{"n": node}, p, true); err != nil {
		t.Errorf("forced: %v", err)
	}
}

func TestBatches(t *testing.T) {
	nodes := []string{"a", "b", "c"}
	for _, tc := range []struct {
		n    int
		want [][]string
	}{
		{0, [][]string{{"a", "b", "c"}}},
		{1, [][]string{{"a"}, {"b"}, {"c"}}},
		{2, [][]string{{"a", "b"}, {"c"}}},
		{5, [][]string{{"a", "b", "c"}}},
	} {
		if got := batches(nodes, tc.n); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("batches of %d: %v, want %v", tc.n, got, tc.want)
		}
	}
}
