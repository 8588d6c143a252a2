package main

import (
	"os"
	"runtime/debug"
)

// Most commands run once and exit: a judge decodes a whole fleet into a
// small snapshot, and almost all it allocates is garbage at once.
// Collecting at 4x the live heap instead of 2x cut audit's CPU at 5,000
// realistic nodes from 1.9 to 1.5 CPU-seconds, for 116 MB of peak RSS
// instead of 86 (bench/RESULTS.md, "Small objects"). It is set first thing
// in main, so that the start (flags, kubeconfig, clients; 3 MB) does not
// collect either. watch and serve, which live long, go back to Go's
// default. A GOGC the user set wins over both.
func oneShotGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// longLivedGC is Go's default pace, for watch and serve.
func longLivedGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}
