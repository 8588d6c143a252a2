package main

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/metrics"
	"github.com/gpuops/gpuops/pkg/nodeevents"
	"github.com/gpuops/gpuops/pkg/oneline"
	"github.com/gpuops/gpuops/pkg/reportsync"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/words"
)

type serveOptions struct {
	cliopts.Judging
	listen          string
	events, reports bool
}

func serveCommand(e cliopts.Env) *cli.Command {
	o := &serveOptions{Judging: cliopts.Judging{Env: e}}
	return command(&cli.Command{
		Name:  "serve",
		Usage: "keep the verdict live and export it: Prometheus /metrics, /healthz, /readyz",
		Description: "Watches nodes, the namespace's pods, DaemonSets and ControllerRevisions, and the driver upgrade\n" +
			"controller's node Events; judges as audit --explain, order-check, matrix, health and upgrades do\n" +
			"(every node once, then only the nodes an event touches; the rollout over every node) and serves\n" +
			"the verdicts as Prometheus metrics (gpuops_operand_missing, gpuops_order_violation,\n" +
			"gpuops_node_usable, gpuops_driver_upgrade_node, ...; see docs/metrics.md). A resource the user may\n" +
			"not list (ControllerRevisions, Events) is left unwatched with a line on stderr.\n" +
			"/readyz answers 503 until the first full verdict. In a pod it uses the pod's service account.\n" +
			"It runs until SIGTERM or Ctrl-C (exit 0); a failed watch is retried and logged on stderr.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: metrics.DefaultAddress, Destination: &o.listen, Usage: "address to serve HTTP on, host:port"},
			o.SelectorFlag(), o.DiscoverFlag(), o.AllRulesFlag(), o.StuckAfterFlag(),
			&cli.BoolFlag{Name: "events", Destination: &o.events, Usage: "record a Kubernetes Event on the node when a finding starts and when it ends\n" +
				"(needs create and patch on events in the default namespace)"},
			&cli.BoolFlag{Name: "reports", Destination: &o.reports, Usage: "keep the findings in the cluster as OpenReports ClusterReports, for Policy Reporter\n" +
				"(needs the CRD, and the rights kustomize/deploy/reports adds)"},
		},
	}, o)
}

func (o *serveOptions) Validate() error {
	if err := o.Judging.Validate(nil); err != nil {
		return err
	}
	o.Opts.Explain, o.Opts.Health, o.Opts.Upgrades = true, true, true // reasons, health and the rollout are metrics too
	return nil
}

func (o *serveOptions) Run(ctx context.Context) error {
	defaultGC()
	j, cl, err := newTracker(&o.Judging, live.Options{Options: o.Opts}, false)
	if err != nil {
		return err
	}
	if o.events {
		nodeevents.Record(ctx, j, cl.Kube)
	}
	if o.reports {
		failed := func(err error) { fmt.Fprintf(o.ErrOut, "%s; retrying\n", oneline.Error(err)) }
		if _, err := reportsync.Start(ctx, j, cl.Config, reportsync.Options{Namespace: o.Opts.Namespace, Failed: failed}); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "serving http://%s/metrics\n", ln.Addr())
	j.Observe(live.Hooks{
		Judged: func(b verdict.Batch) {
			if b.Initial {
				fmt.Fprintf(o.ErrOut, "ready: %s judged in %s\n", words.Count(b.Judged, "node"), b.Took)
				// The first lists' garbage (every object whole, before
				// the trim) is hundreds of MB at 5,000 nodes, and with
				// nothing left to allocate no GC would ever collect it:
				// return it now, once, so the steady memory is the store's.
				debug.FreeOSMemory()
			}
		},
		WatchFailed: func(resource string, err error) {
			fmt.Fprintf(o.ErrOut, "%s: %s; retrying\n", resource, oneline.Error(err))
		},
		Skipped: func(resource, without string, err error) {
			fmt.Fprintf(o.ErrOut, "%s: not watched, %s: %s\n", resource, without, oneline.Error(err))
		},
	})
	return metrics.Serve(ctx, ln, j)
}
