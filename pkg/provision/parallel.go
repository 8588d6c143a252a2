package provision

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// inFlight is how many per-node requests gpuops keeps going at once: one
// after another, labelling a 5,000-node fleet took minutes of round trips.
// The client's QPS limit (pkg/kube) still paces them.
const inFlight = 32

// forEach calls f for 0..n-1 concurrently and waits for all of them. It
// returns the error of the lowest index that failed, so a failure reads the
// same from run to run.
func forEach(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(inFlight)
	for i := range n {
		g.Go(func() error {
			errs[i] = f(ctx, i)
			return nil
		})
	}
	_ = g.Wait() // the errors are in errs
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
