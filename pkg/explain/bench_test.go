package explain_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// fleet is n GPU nodes asking for every operand, one pod per node and
// operand, the lab's DaemonSets; every tenth node has a Pending driver pod
// (a MISSING to explain) and every twentieth a device-plugin label 'True'.
func fleet(n int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: ns}
	for _, o := range operand.Lab {
		s.DaemonSets = append(s.DaemonSets, ds(o))
	}
	for i := range n {
		name := fmt.Sprintf("gpu-node-%d", i)
		labels := map[string]string{}
		for _, o := range operand.Lab {
			labels[o.LabelKey()] = "true"
			phase := corev1.PodRunning
			if o.Name == operand.Driver && i%10 == 0 {
				phase = corev1.PodPending
			}
			s.Pods = append(s.Pods, snapshot.Pod{Name: fmt.Sprintf("%s-%d", o.DaemonSet, i), Node: name, DaemonSet: o.DaemonSet,
				Phase: phase, Reason: "ImagePullBackOff"})
		}
		if i%20 == 0 {
			labels[plugin.LabelKey()] = "True"
		}
		s.Nodes = append(s.Nodes, snapshot.Node{Name: name, Labels: labels, Ready: true})
	}
	return s
}

// The cost of --explain over the plain audit, at 5,000 nodes:
//
//	go test ./pkg/explain -run '^$' -bench . -count 6 | benchstat -col /audit -
func BenchmarkExplain5000(b *testing.B) {
	s := fleet(5000)
	b.Run("audit=plain", func(b *testing.B) {
		for b.Loop() {
			judge.Audit(s, operand.Lab)
		}
	})
	b.Run("audit=explained", func(b *testing.B) {
		for b.Loop() {
			explain.Explain(s, operand.Lab, judge.Audit(s, operand.Lab), explain.Clock{})
		}
	})
}
