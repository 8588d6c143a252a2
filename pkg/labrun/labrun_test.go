package labrun_test

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/labrun"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func running(node string, o operand.Operand) snapshot.Pod {
	return snapshot.Pod{Name: o.DaemonSet + "-" + node, Node: node, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning}
}

// judged is the lab's judgement of s: its five operands, the device rule.
func judged(t *testing.T, s *snapshot.Snapshot) *pipeline.Result {
	t.Helper()
	r, err := pipeline.Decide(s, pipeline.Options{Roster: pipeline.LabRoster}).Judge(s, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// OrderText lists the lab spec's nodes, in natural order, and no other node.
func TestOrderText(t *testing.T) {
	lab, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	plugin, _ := operand.Lookup(operand.Lab, operand.DevicePlugin)
	toolkit, _ := operand.Lookup(operand.Lab, operand.ContainerToolkit)
	s := &snapshot.Snapshot{}
	// Reversed, and with a node of the cluster that is not the lab's.
	for _, n := range []string{"lab-node-2", "lab-node-1", "lab-node-0", "checker-node"} {
		s.Nodes = append(s.Nodes, snapshot.Node{Name: n})
	}
	s.Pods = []snapshot.Pod{
		running("lab-node-0", plugin), running("lab-node-0", toolkit),
		running("lab-node-1", toolkit),
		running("lab-node-2", plugin),
		running("checker-node", plugin),
	}
	got, err := labrun.OrderText(judged(t, s), lab)
	if err != nil {
		t.Fatal(err)
	}
	want := "lab-node-0 ok\nlab-node-1 ok\nlab-node-2 device-plugin-without-toolkit\n"
	if string(got) != want {
		t.Errorf("order.txt:\n%s\nwant:\n%s", got, want)
	}

	s.Nodes = s.Nodes[1:] // lab-node-2 is gone
	var nf *judge.NodeNotFoundError
	if _, err := labrun.OrderText(judged(t, s), lab); !errors.As(err, &nf) || nf.Node != "lab-node-2" {
		t.Errorf("err = %v, want lab-node-2 not found", err)
	}
}
