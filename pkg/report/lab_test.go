package report_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// labJudged is the lab's judgement of s: its five operands, the device rule.
func labJudged(t *testing.T, s *snapshot.Snapshot) *outcome.Result {
	t.Helper()
	r, err := pipeline.Decide(s, pipeline.Options{Roster: pipeline.LabRoster}).Judge(s, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// LabOrder lists the nodes named, in natural order, and no other node.
func TestLabOrder(t *testing.T) {
	lab, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range lab.Nodes {
		names = append(names, n.Name)
	}
	slices.SortFunc(names, judge.NaturalCompare)
	if len(names) != 3 {
		t.Fatalf("the lab spec has %d nodes, this test wants 3", len(names))
	}
	plugin, _ := operand.Lookup(operand.Lab, operand.DevicePlugin)
	toolkit, _ := operand.Lookup(operand.Lab, operand.ContainerToolkit)
	running := func(node string, o operand.Operand) snapshot.Pod {
		return snapshot.Pod{Name: o.DaemonSet + "-" + node, Node: node, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning}
	}
	s := &snapshot.Snapshot{}
	// Reversed, and with a node of the cluster that is not the lab's.
	for _, n := range []string{names[2], names[1], names[0], "checker-node"} {
		s.Nodes = append(s.Nodes, snapshot.Node{Name: n})
	}
	s.Pods = []snapshot.Pod{
		running(names[0], plugin), running(names[0], toolkit),
		running(names[1], toolkit),
		running(names[2], plugin),
		running("checker-node", plugin),
	}
	got, err := report.LabOrder(labJudged(t, s), names)
	if err != nil {
		t.Fatal(err)
	}
	want := names[0] + " ok\n" + names[1] + " ok\n" + names[2] + " device-plugin-without-toolkit\n"
	if string(got) != want {
		t.Errorf("order.txt:\n%s\nwant:\n%s", got, want)
	}

	s.Nodes = s.Nodes[1:] // the last is gone
	var nf *judge.NodeNotFoundError
	if _, err := report.LabOrder(labJudged(t, s), names); !errors.As(err, &nf) || nf.Node != names[2] {
		t.Errorf("err = %v, want %s not found", err, names[2])
	}
}
