package main

import (
	"os"
	"runtime/debug"
)

// oneShotGC is the garbage collector's pace of a judge, which runs once: it
// decodes a whole fleet into a small snapshot, and almost all it allocates
// is garbage at once. Collecting at 4x the live heap instead of 2x cut
// audit's CPU at 5,000 realistic nodes from 1.9 to 1.5 CPU-seconds, for 116
// MB of peak RSS instead of 86 (bench/RESULTS.md, "Small objects"). It is
// set first thing in main, so that the start (flags, kubeconfig, clients:
// 3 MB) does not collect either. A GOGC the user set wins.
func oneShotGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// defaultGC is Go's own pace, for the commands that hold the cluster's
// objects while they wait or watch: provisioning until the fleet settles,
// watch and serve.
func defaultGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(100)
	}
}
