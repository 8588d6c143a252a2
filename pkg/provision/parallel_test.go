package provision

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

func TestForEachRunsAllAndReportsTheLowestFailure(t *testing.T) {
	var calls, running, peak atomic.Int32
	err := forEach(context.Background(), 200, func(_ context.Context, i int) error {
		calls.Add(1)
		if r := running.Add(1); r > peak.Load() {
			peak.Store(r)
		}
		defer running.Add(-1)
		if i == 150 || i == 70 {
			return fmt.Errorf("fail %d", i)
		}
		return nil
	})
	if calls.Load() != 200 {
		t.Errorf("%d calls, want 200: a failure must not stop the others", calls.Load())
	}
	if err == nil || err.Error() != "fail 70" {
		t.Errorf("error %v, want the lowest index's: fail 70", err)
	}
	if peak.Load() > inFlight {
		t.Errorf("%d calls at once, want at most %d", peak.Load(), inFlight)
	}
	if err := forEach(context.Background(), 5, func(context.Context, int) error { return nil }); err != nil {
		t.Errorf("no failure: %v", err)
	}
	if !errors.Is(forEach(context.Background(), 1, func(context.Context, int) error { return context.Canceled }), context.Canceled) {
		t.Error("the error is not passed on as it is")
	}
}
