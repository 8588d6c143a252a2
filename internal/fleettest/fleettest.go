// Package fleettest generates the snapshot of a GPU fleet of any size for
// tests and benchmarks of the fleet views (no cluster needed): nodes in
// several pools, most of them healthy, and every kind of finding and state
// at a fixed rhythm, so counts are known in advance.
package fleettest

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
)

// GroupBy is the label the pools are told apart by.
const GroupBy = operand.GPUProductLabel

// Pools are the label values, one node in len(Pools)+1 has none.
var Pools = []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L40S", "Tesla-T4"}

// Kinds of node, by i % Period.
const (
	Period   = 50
	Tainted  = 7  // asks for everything; a taint keeps the driver away: MISSING driver
	NoKit    = 13 // container-toolkit label "false": device plugin and the rest run without it (order)
	Paused   = 21 // driver label paused-for-driver-upgrade, no driver pod; the toolkit runs on (order)
	NoDCGM   = 33 // dcgm-exporter label "false", no exporter pod: disabled
	Disabled = 41 // nvidia.com/gpu.deploy.operands=false and no deploy labels: nothing runs
)

// Snapshot is a fleet of n nodes named gpu-<i>, with the lab's operands.
func Snapshot(n int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: "gpu-operator"}
	for _, o := range operand.Lab {
		s.DaemonSets = append(s.DaemonSets, snapshot.DaemonSet{Name: o.DaemonSet, NodeSelector: map[string]string{o.LabelKey(): "true"}})
	}
	for i := range n {
		name := fmt.Sprintf("gpu-%d", i)
		labels := map[string]string{}
		if p := i % (len(Pools) + 1); p < len(Pools) {
			labels[GroupBy] = Pools[p]
		}
		node := snapshot.Node{Name: name, Labels: labels, Ready: true}
		runs := map[string]bool{}
		for _, o := range operand.Lab {
			labels[o.LabelKey()] = "true"
			runs[o.Name] = true
		}
		switch i % Period {
		case Tainted:
			node.Taints = []corev1.Taint{{Key: "example.com/gpu-broken", Value: "yes", Effect: corev1.TaintEffectNoSchedule}}
			runs[operand.Driver] = false
		case NoKit:
			labels[operand.LabelPrefix+operand.ContainerToolkit] = "false"
			runs[operand.ContainerToolkit] = false
		case Paused:
			labels[operand.LabelPrefix+operand.Driver] = "paused-for-driver-upgrade"
			runs[operand.Driver] = false
		case NoDCGM:
			labels[operand.LabelPrefix+operand.DCGMExporter] = "false"
			runs[operand.DCGMExporter] = false
		case Disabled:
			node.Labels = map[string]string{operand.OperandsLabel: "false"}
			if v, ok := labels[GroupBy]; ok {
				node.Labels[GroupBy] = v
			}
			clear(runs)
		}
		s.Nodes = append(s.Nodes, node)
		for _, o := range operand.Lab {
			if runs[o.Name] {
				s.Pods = append(s.Pods, snapshot.Pod{Name: o.DaemonSet + "-" + name, Node: name, DaemonSet: o.DaemonSet, Phase: corev1.PodRunning})
			}
		}
	}
	return s
}

// Fleet is the fleet view of Snapshot(n): the lab's operands, every rule
// they allow, grouped by GroupBy.
func Fleet(tb testing.TB, n int) summary.Fleet {
	tb.Helper()
	p := pipeline.Scope{Options: pipeline.Options{Explain: true, GroupBy: GroupBy}, Roster: operand.Lab, Rules: operand.RulesFor(operand.Lab, operand.AllRules)}
	r, err := p.Judge(Snapshot(n), time.Time{})
	if err != nil {
		tb.Fatal(err)
	}
	return *r.Fleet
}
