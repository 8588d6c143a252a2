package gpuopstest

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Followed is a live tracker run in process, as serve runs it, and the
// health cause of each node it has judged so far.
type Followed struct {
	batches chan verdict.Batch
	// Causes are each judged node's health cause code, "" when usable.
	Causes map[string]string
}

// Follow runs a live tracker with opts on the cluster until the test ends,
// and takes its first batch (every node judged).
func Follow(t *testing.T, client kubernetes.Interface, opts live.Options) *Followed {
	t.Helper()
	j, err := live.New(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &Followed{batches: make(chan verdict.Batch, 256), Causes: map[string]string{}}
	j.Observe(live.Hooks{Judged: func(b verdict.Batch) { f.batches <- b }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	f.Next(t)
	return f
}

// Next takes the next batch into Causes; a minute without one fails the
// test.
func (f *Followed) Next(t *testing.T) {
	t.Helper()
	select {
	case b := <-f.batches:
		for _, c := range b.Changes {
			if c.After == nil || c.After.Health == nil {
				delete(f.Causes, c.Node())
				continue
			}
			f.Causes[c.Node()] = ""
			if cause := c.After.Health.Cause; cause != nil {
				f.Causes[c.Node()] = cause.Code
			}
		}
	case <-time.After(time.Minute):
		t.Fatalf("no verdict within a minute; the last: %v", f.Causes)
	}
}

// WaitFor takes batches until the node's cause is code ("" usable).
func (f *Followed) WaitFor(t *testing.T, node, code string) {
	t.Helper()
	for {
		if got, ok := f.Causes[node]; ok && got == code {
			return
		}
		f.Next(t)
	}
}
