package reportsync

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// BenchmarkJudged is what --reports adds to each batch of serve at 5,000
// nodes, split per node: one node's verdict changed.
func BenchmarkJudged(b *testing.B) {
	s := &Sync{opts: Options{MaxBytes: 512 << 10, Delay: time.Hour}, judged: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		nodes: map[string]openreports.Node{}, desired: map[string]*v1alpha1.ClusterReport{}, written: map[string][sha256.Size]byte{}}
	defer s.queue.ShutDown()
	lab := func(name string, missing []string) *verdict.Verdict {
		asked := []string{}
		for _, o := range operand.Lab {
			asked = append(asked, o.Name)
		}
		return &verdict.Verdict{Node: name, Audit: judge.NodeAudit{Node: name, Asked: asked, Missing: missing},
			Order: judge.OrderVerdict{Node: name, Rules: operand.RulesFor(operand.Lab, operand.AllRules)}}
	}
	first := verdict.Batch{Initial: true, Time: time.Now()}
	for i := range 5000 {
		first.Changes = append(first.Changes, verdict.Change{After: lab(fmt.Sprintf("gpu-node-%04d", i), nil)})
	}
	s.Judged(first)
	if len(s.desired) != 5000 {
		b.Fatalf("%d reports of 5,000 nodes", len(s.desired))
	}
	b.ResetTimer()
	for i := range b.N {
		v := lab("gpu-node-0042", []string{operand.Driver}[:i%2])
		s.Judged(verdict.Batch{Time: time.Now(), Changes: []verdict.Change{{Before: lab("gpu-node-0042", nil), After: v}}})
	}
}
