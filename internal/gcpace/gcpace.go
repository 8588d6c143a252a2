// Package gcpace sets the garbage collector's pace of gpuops: a judge runs
// once, decodes a whole fleet into a small snapshot, and almost all it
// allocates is garbage at once. Collecting at 4x the live heap instead of
// 2x cut audit's CPU at 5,000 realistic nodes from 1.9 to 1.5 CPU-seconds,
// for 116 MB of peak RSS instead of 86 (bench/RESULTS.md, "Small objects").
//
// The pace is set in this package's init, which the Go runtime runs before
// the packages that allocate most at start (client-go's scheme and the API
// types, initialised by import path after it): set first thing in main, it
// came too late: the start's 2.7 MB of allocations reached Go's first
// heap goal of 4 MB with the runtime's own, and the collector ran before
// main, with its worker threads, on most starts measured here. A GOGC the
// user set wins.
package gcpace

import (
	"os"
	"runtime/debug"
)

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// Steady is Go's own pace, for the commands that hold the cluster's
// objects while they wait or watch: provisioning until the fleet settles,
// watch and serve.
func Steady() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}
