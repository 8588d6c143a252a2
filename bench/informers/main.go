// Command informers is the memory floor of `go tool task bench:serve`: the
// informers gpuops serve runs (pkg/live), on the same objects with the same
// transforms, and nothing else — no judge, no exporter. What serve holds
// above it is its verdicts and their exporters. It prints "synced" on stderr
// once the informers have their first lists, and runs until SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/pipeline"
)

func main() {
	namespace := flag.String("n", kube.DefaultNamespace, "namespace of the operand DaemonSets and their pods")
	workloads := flag.Bool("workloads", false, "also the informers of serve --workloads: every pod of the cluster with the transform that keeps GPU pods, the refused pods, claims, classes and pod Warnings")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *namespace, *workloads); err != nil {
		fmt.Fprintf(os.Stderr, "informers: error: %v\n", err)
		os.Exit(2)
	}
}

func run(ctx context.Context, namespace string, workloads bool) error {
	cl, err := kube.Connect(kube.NewFlags()) // $KUBECONFIG, as gpuops reads it
	if err != nil {
		return err
	}
	client, err := cl.ForWatching()
	if err != nil {
		return err
	}
	// What serve watches and keeps: its options as its Validate sets them.
	t, err := live.New(client, live.Options{Options: pipeline.Options{
		Namespace: namespace, Roster: pipeline.AutoRoster, AllRules: true, StuckAfter: pipeline.DefaultStuckAfter,
		Explain: true, Health: true, Upgrades: true, Workloads: workloads,
	}})
	if err != nil {
		return err
	}
	return t.Hold(ctx, func() {
		debug.FreeOSMemory() // as serve does after its first batch
		fmt.Fprintln(os.Stderr, "synced")
	})
}
