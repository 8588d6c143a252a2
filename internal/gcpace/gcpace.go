// Package gcpace sets how gpuops's heap is collected and backed: a judge
// runs once, decodes a whole fleet into a small snapshot, and almost all it
// allocates is garbage at once.
//
// A one-shot command collects first when its heap reaches 64 MiB (GOGC off
// under a memory limit), and from then on at 4x the live heap (GOGC 400),
// without the limit. At 1,000 nodes a judge's whole read allocates less than
// that, so it never collects: at Go's own pace its collections came while the
// pods were merged and judged, and their assists and write barriers doubled
// that tail. On a large fleet the first collection comes at 64 MiB and the pace
// then spends less CPU than Go's own (docs/scale.md, "Mechanisms"); a fleet
// whose snapshot outgrows the limit never runs under it.
//
// The first HugeHeap bytes of its heap are backed by huge pages where the
// kernel has them (hugepages_linux.go); one collection at the start, beside
// the packages' initialisation, hands them to the command.
//
// The pace is set in this package's init, which the Go runtime runs before
// the packages that allocate most at start (client-go's scheme and the API
// types, initialised by import path after it): set first thing in main, it
// came too late: the start's allocations reach Go's first heap goal
// (4 MB) with the runtime's own, and the collector ran before main, with
// its worker threads, on most starts. A GOGC or
// GOMEMLIMIT the user set wins: with GOMEMLIMIT alone the pace is 4x.
package gcpace

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// FirstCollection is the heap at which a one-shot command collects first.
const FirstCollection = 64 << 20

// mu orders the switch to 4x after the first collection with Steady;
// steady is set once a command asks for Go's own pace, which the switch
// must not undo.
var (
	mu     sync.Mutex
	steady bool
)

func init() {
	switch {
	case os.Getenv("GOGC") != "":
	case os.Getenv("GOMEMLIMIT") != "":
		debug.SetGCPercent(400)
	default:
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(FirstCollection)
		huge := hugeHeap()
		go func() {
			defer close(armed)
			if huge {
				runtime.GC() // frees the advised block for the command's allocations
			}
			afterFirstCollection(func() {
				mu.Lock()
				defer mu.Unlock()
				if !steady {
					debug.SetGCPercent(400)
					debug.SetMemoryLimit(math.MaxInt64)
				}
			})
		}()
		return
	}
	close(armed)
}

// armed is closed once the switch to 4x waits for the next collection
// (after the start's own, which frees the huge pages' block).
var armed = make(chan struct{})

// afterFirstCollection calls f once the collector has run: a cleanup of an
// object nothing reaches runs after the first cycle that finds it dead.
func afterFirstCollection(f func()) {
	// A pointer keeps it out of the tiny allocator, whose blocks are shared
	// with other objects and freed only with all of them.
	type sentinel struct{ _ *int }
	runtime.AddCleanup(new(sentinel), func(struct{}) { f() }, struct{}{})
}

// Steady is Go's own pace, for the commands that hold the cluster's
// objects while they wait or watch: provisioning until the fleet settles,
// watch and serve.
func Steady() {
	mu.Lock()
	defer mu.Unlock()
	steady = true
	smallPages() // a long-lived heap is returned to the kernel in small pages
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(100)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
