package actor

import (
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/quarantine"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// A batch wakes the decision, a pass over every GPU node, only when what
// it reads of a node changed; a verdict that changed otherwise (a deploy
// label, under churn most batches) leaves it to the tick.
func TestBatchWakesTheDecisionOnlyForWhatItReads(t *testing.T) {
	a := New(nil, Options{Mode: quarantine.DryRun, Identity: "test"})
	gpu := func(usable bool, missing ...string) *verdict.Verdict {
		return &verdict.Verdict{Node: "gpu-1", Audit: judge.NodeAudit{Node: "gpu-1", Missing: missing},
			Health: &health.Node{Judged: true, Usable: usable}}
	}
	woke := func() bool {
		select {
		case <-a.wake:
			return true
		default:
			return false
		}
	}
	now := time.Now()
	for _, tc := range []struct {
		what  string
		batch verdict.Batch
		wake  bool
	}{
		{"the first batch", verdict.Batch{Initial: true, Time: now, Changes: []verdict.Change{{After: gpu(true)}}}, true},
		{"a verdict changed, usable as it was", verdict.Batch{Time: now, Changes: []verdict.Change{{Before: gpu(true), After: gpu(true, "dcgm-exporter")}}}, false},
		{"unusable now", verdict.Batch{Time: now, Changes: []verdict.Change{{Before: gpu(true), After: gpu(false)}}}, true},
		{"gone", verdict.Batch{Time: now, Changes: []verdict.Change{{Before: gpu(false)}}}, true},
		{"gone again", verdict.Batch{Time: now, Changes: []verdict.Change{{Before: gpu(false)}}}, false},
	} {
		a.take(tc.batch)
		if got := woke(); got != tc.wake {
			t.Errorf("%s: woke the decision %v, want %v", tc.what, got, tc.wake)
		}
	}
}
