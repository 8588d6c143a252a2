package fleettest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/internal/testcluster"
)

// A dressed node and pod have a real one's size (docs/scale.md), and keep
// what the fleet set itself: its labels, the operand container first.
func TestDressedSizes(t *testing.T) {
	n := testcluster.FakeNode("gpu-node-7", map[string]string{"nvidia.com/gpu.deploy.driver": "false"})
	fleettest.DressNode(n, 7)
	if l := len(n.Labels); l < 80 || l > 150 {
		t.Errorf("%d labels, want 80-150", l)
	}
	if i := len(n.Status.Images); i < 30 || i > 60 {
		t.Errorf("%d images, want 30-60", i)
	}
	if n.Labels["nvidia.com/gpu.deploy.driver"] != "false" || n.Labels["kubernetes.io/hostname"] != "gpu-node-7" {
		t.Errorf("the node's own labels were overwritten: %v", n.Labels)
	}
	// KWOK's node stage writes node info unquoted: an all-digit ID would read as a number.
	for _, id := range []string{n.Status.NodeInfo.MachineID, n.Status.NodeInfo.BootID, n.Status.NodeInfo.SystemUUID} {
		if id == "" || id[0] < 'a' || id[0] > 'z' {
			t.Errorf("node info ID %q does not start with a letter", id)
		}
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "driver", Image: "example.com/driver"}}}
	fleettest.DressPodSpec(&spec, "driver")
	if spec.Containers[0].Name != "driver" || len(spec.InitContainers) < 2 || len(spec.Volumes) < 10 || len(spec.Containers[0].Env) < 10 {
		t.Errorf("dressed pod: %d init containers, %d volumes, first container %s with %d env vars",
			len(spec.InitContainers), len(spec.Volumes), spec.Containers[0].Name, len(spec.Containers[0].Env))
	}
}
