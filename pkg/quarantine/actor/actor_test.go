package actor

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/live"
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

// The actor holds the GPU nodes a decision may touch, and only counts the
// others (most of a fleet): the default max is still a share of them all.
// A node in the overlay (dry-run's quarantine) is held while usable again,
// so that it is released.
func TestHoldsOnlyWhatADecisionMayTouch(t *testing.T) {
	a := New(nil, Options{Mode: quarantine.DryRun, Identity: "test", Synced: func() map[live.Resource]bool { return nil }})
	node := func(name string, usable bool) *verdict.Verdict {
		return &verdict.Verdict{Node: name, Health: &health.Node{Judged: true, Usable: usable}}
	}
	var first []verdict.Change
	for i := range 40 {
		first = append(first, verdict.Change{After: node(fmt.Sprintf("gpu-%d", i), i >= 2)})
	}
	first = append(first, verdict.Change{After: &verdict.Verdict{Node: "cpu-0"}}) // no GPU: health not judged
	t0 := time.Now()
	a.take(verdict.Batch{Initial: true, Time: t0, Changes: first})
	held := func(want ...string) {
		t.Helper()
		in := a.input(t0)
		var got []string
		for _, n := range in.Nodes {
			got = append(got, n.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("holds %v, want %v", got, want)
		}
	}
	held("gpu-0", "gpu-1")
	if in := a.input(t0); in.GPUNodes != 40 || quarantine.Decide(in).Max != 4 {
		t.Errorf("GPU nodes %d (max %d), want 40 (max 4)", in.GPUNodes, quarantine.Decide(in).Max)
	}
	t1 := t0.Add(time.Minute)
	a.take(verdict.Batch{Time: t1, Changes: []verdict.Change{
		{Before: node("gpu-1", false)},                             // gone
		{Before: node("gpu-7", true), After: node("gpu-7", false)}, // unusable now
	}})
	held("gpu-0", "gpu-7")
	if got := a.nodes["gpu-7"].Since; !got.Equal(t1) {
		t.Errorf("gpu-7 unusable since %v, want %v", got, t1)
	}
	if in := a.input(t1); in.GPUNodes != 39 {
		t.Errorf("GPU nodes %d after one left, want 39", in.GPUNodes)
	}
	since := t1
	a.overlay["gpu-0"] = &ledger.Entry{Actor: ledger.Gpuops, Cordoned: true, Since: &since} // would quarantine
	a.take(verdict.Batch{Time: t1, Changes: []verdict.Change{{Before: node("gpu-0", false), After: node("gpu-0", true)}}})
	held("gpu-0", "gpu-7")
	a.opts.Settings.ReleaseAfter = time.Second
	if d := quarantine.Decide(a.input(t1.Add(time.Minute))); len(d.Release) != 1 || d.Release[0].Node != "gpu-0" {
		t.Errorf("the dry-run quarantine of gpu-0, usable again, is not released: %+v", d)
	}
}
