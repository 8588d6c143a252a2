package reportsync

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// BenchmarkHeld is the heap a Sync holds per node of 5,000, split per node,
// against its baseline, measured in the same run: holding each node's
// results, as it did before it held only their digests and times.
func BenchmarkHeld(b *testing.B) {
	first := fleetBatch(5000)
	heap := func(hold func() any) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		held := hold()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(held)
		return float64(after.HeapAlloc-before.HeapAlloc) / 5000
	}
	var sync, results float64
	for range b.N {
		sync = heap(func() any {
			s := newSync()
			s.Judged(first)
			s.queue.ShutDown()
			for name, w := range s.desired { // written, as they soon are
				s.written[name] = w.digest
			}
			return s
		})
		results = heap(func() any {
			var held []openreports.Node
			for _, c := range first.Changes {
				held = append(held, openreports.NodeOf(c.After, "", first.Time))
			}
			return held
		})
	}
	b.ReportMetric(sync, "B/node")
	b.ReportMetric(results, "baseline-B/node")
}

func newSync() *Sync {
	return &Sync{opts: Options{MaxBytes: 512 << 10, Delay: time.Hour}, judged: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		nodes: map[string]node{}, desired: map[string]wanted{}, written: map[string]openreports.Sum{}}
}

func labVerdict(name string, missing []string) *verdict.Verdict {
	asked := []string{}
	for _, o := range operand.Lab {
		asked = append(asked, o.Name)
	}
	return &verdict.Verdict{Node: name, Audit: judge.NodeAudit{Node: name, Asked: asked, Missing: missing},
		Order: judge.NodeOrder{Node: name, Rules: operand.RulesFor(operand.Lab, operand.AllRules)}}
}

// fleetBatch is the first batch of n lab nodes.
func fleetBatch(n int) verdict.Batch {
	first := verdict.Batch{Initial: true, Time: time.Now()}
	for i := range n {
		first.Changes = append(first.Changes, verdict.Change{After: labVerdict(fmt.Sprintf("gpu-node-%04d", i), nil)})
	}
	return first
}

// BenchmarkJudged is what --reports adds to each batch of serve at 5,000
// nodes, split per node: one node's verdict changed.
func BenchmarkJudged(b *testing.B) {
	s := newSync()
	defer s.queue.ShutDown()
	s.Judged(fleetBatch(5000))
	if len(s.desired) != 5000 {
		b.Fatalf("%d reports of 5,000 nodes", len(s.desired))
	}
	b.ResetTimer()
	for i := range b.N {
		v := labVerdict("gpu-node-0042", []string{operand.Driver}[:i%2])
		s.Judged(verdict.Batch{Time: time.Now(), Changes: []verdict.Change{{Before: labVerdict("gpu-node-0042", nil), After: v}}})
	}
}
