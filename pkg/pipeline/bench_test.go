package pipeline_test

import (
	"testing"
	"time"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/pkg/pipeline"
)

// BenchmarkJudge5000 is what a one-shot judge does once its read is in:
// every verdict of a 5,000-node fleet, as audit and health judge it with
// their default --stuck-after. It runs after the read, on one core, so its
// time adds to the wall's.
//
//	go test ./pkg/pipeline -run '^$' -bench Judge5000 -count 6 | benchstat -col /judge -
func BenchmarkJudge5000(b *testing.B) {
	s := fleettest.Snapshot(5000)
	for i := range s.Pods { // as a settled fleet's: Ready
		s.Pods[i].Health.Ready = true
	}
	now := time.Now()
	for _, tc := range []struct {
		name string
		opts pipeline.Options
	}{
		{"audit", pipeline.Options{Namespace: s.Namespace, StuckAfter: pipeline.DefaultStuckAfter}},
		{"health", pipeline.Options{Namespace: s.Namespace, StuckAfter: pipeline.DefaultStuckAfter, Health: true}},
	} {
		b.Run("judge="+tc.name, func(b *testing.B) {
			p := pipeline.Decide(s, tc.opts)
			for b.Loop() {
				if _, err := p.Judge(s, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
