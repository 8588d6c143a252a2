package judge_test

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// fleet builds an in-memory snapshot of n GPU nodes with every operand asked
// for except on one node in twenty, which opts out of one, and one pod per node
// and operand asked for (about 5 n pods), every fifth driver pod Pending.
// Nodes and pods come in random-ish order, as an API list may return them.
func fleet(n int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: "gpu-operator"}
	for i := range n {
		node := fmt.Sprintf("gpu-node-%d", (i*7919)%n)
		labels := map[string]string{"nvidia.com/gpu.present": "true"}
		for k, o := range operand.Lab {
			on := i%100 != k*20
			labels[o.LabelKey()] = fmt.Sprint(on)
			if !on {
				continue
			}
			phase := corev1.PodRunning
			if k == 0 && i%5 == 0 {
				phase = corev1.PodPending
			}
			s.Pods = append(s.Pods, snapshot.Pod{
				Name: fmt.Sprintf("%s-%05d", o.DaemonSet, i), Node: node, DaemonSet: o.DaemonSet, Phase: phase,
			})
		}
		s.Nodes = append(s.Nodes, snapshot.Node{Name: node, Labels: labels, Ready: true})
	}
	return s
}

// naiveAudit is the per-node recipe (for each node, scan every pod), the
// baseline the indexed judge is measured against.
func naiveAudit(s *snapshot.Snapshot, roster []operand.Operand) []judge.NodeAudit {
	var out []judge.NodeAudit
	for _, n := range judge.SortedNodes(s) {
		a := judge.NodeAudit{Node: n.Name, Missing: []string{}}
		for _, o := range roster {
			if !o.AskedBy(n.Labels) {
				continue
			}
			if !slices.ContainsFunc(s.Pods, func(p snapshot.Pod) bool {
				return p.Node == n.Name && p.DaemonSet == o.DaemonSet && p.Present()
			}) {
				a.Missing = append(a.Missing, o.Name)
			}
		}
		out = append(out, a)
	}
	return out
}

func TestNaiveAuditAgrees(t *testing.T) {
	s := fleet(300)
	got, want := judge.Audit(s, operand.Lab), naiveAudit(s, operand.Lab)
	if !slices.EqualFunc(got, want, func(a, b judge.NodeAudit) bool {
		return a.Node == b.Node && slices.Equal(a.Missing, b.Missing)
	}) {
		t.Fatalf("indexed audit and per-node scan disagree")
	}
	if !judge.AuditFailed(got) {
		t.Fatalf("the fleet has Pending driver pods, the audit must fail")
	}
}

// The judging core at 5,000 nodes: compare with
//
//	go test ./pkg/judge -run '^$' -bench . -count 6 | benchstat -col /judge -
func BenchmarkAudit5000(b *testing.B) {
	s := fleet(5000)
	b.Run("judge=naive", func(b *testing.B) {
		for b.Loop() {
			naiveAudit(s, operand.Lab)
		}
	})
	b.Run("judge=indexed", func(b *testing.B) {
		for b.Loop() {
			judge.Audit(s, operand.Lab)
		}
	})
}

func BenchmarkMatrix5000(b *testing.B) {
	s := fleet(5000)
	for b.Loop() {
		judge.NewIndex(s).Matrix(operand.Lab)
	}
}
