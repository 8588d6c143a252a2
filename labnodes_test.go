package gpuops_test

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// TestLabClusterNodesAreTheSpec: the fake nodes hack/cluster.sh makes for
// the lab are the lab spec's, in its order, each advertising as many
// nvidia.com/gpu as its gpus: says (capacity and allocatable), and a node
// without GPUs none: the script reads the spec with awk, gpuops with
// pkg/labspec, and the two must not drift.
func TestLabClusterNodesAreTheSpec(t *testing.T) {
	lab, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "hack/cluster.sh", "nodes", "lab/lab.yaml").Output()
	if err != nil {
		t.Fatalf("hack/cluster.sh nodes: %v", err)
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var nodes []corev1.Node
	for {
		var n corev1.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("hack/cluster.sh nodes: %v\n%s", err, out)
		}
		nodes = append(nodes, n)
	}
	if len(nodes) != len(lab.Nodes) {
		t.Fatalf("hack/cluster.sh makes %d nodes, the spec has %d", len(nodes), len(lab.Nodes))
	}
	gpu := corev1.ResourceName(snapshot.GPUResource)
	for i, want := range lab.Nodes {
		n := nodes[i]
		capacity, hasCapacity := n.Status.Capacity[gpu]
		allocatable, hasAllocatable := n.Status.Allocatable[gpu]
		if n.Name != want.Name || capacity.Value() != want.GPUs || allocatable.Value() != want.GPUs ||
			hasCapacity != (want.GPUs > 0) || hasAllocatable != (want.GPUs > 0) {
			t.Errorf("hack/cluster.sh's node %d: %s with %s capacity %v, allocatable %v; the spec: %s with %d GPUs",
				i, n.Name, gpu, n.Status.Capacity, n.Status.Allocatable, want.Name, want.GPUs)
		}
	}
}
