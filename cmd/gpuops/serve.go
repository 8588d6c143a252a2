package main

import (
	"context"
	"fmt"
	"net"
	"runtime/debug"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/metrics"
	"github.com/gpuops/gpuops/pkg/nodeevents"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/quarantine"
	"github.com/gpuops/gpuops/pkg/quarantine/actor"
	"github.com/gpuops/gpuops/pkg/reportsync"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/words"
)

type serveOptions struct {
	cliopts.Judging
	listen          string
	events, reports bool
	workloads       bool
	quarantine      string
	settings        quarantine.Settings
	maxSet          bool // --quarantine-max given: an explicit 0 is refused, not taken for the default
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
			"not list (ControllerRevisions, Events) is left unwatched with a line on stderr. gpuops_node_pool names\n" +
			"each GPU node's pool, its value of the --group-by label, as summary groups the nodes. With --workloads\n" +
			"it also watches every pod of the cluster and exports the workload side as capacity and pods judge it,\n" +
			"through the same functions: where the GPUs are (gpuops_gpus) and the stuck GPU pods by namespace and\n" +
			"cause (gpuops_gpu_pods_blocked), with the alerts GpuopsGPUPodsBlockedByStack and GpuopsGPUsStranded.\n" +
			"/readyz answers 503 until the first full verdict. In a pod it uses the pod's service account.\n" +
			"It runs until SIGTERM or Ctrl-C (exit 0); a failed watch is retried and logged on stderr.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: metrics.DefaultAddress, Destination: &o.listen, Usage: "address to serve HTTP on, host:port"},
			o.SelectorFlag(), o.DiscoverFlag(), o.AllRulesFlag(), o.StuckAfterFlag(), o.GroupByFlag(pipeline.DefaultGroupBy),
			&cli.BoolFlag{Name: "events", Destination: &o.events, Usage: "record a Kubernetes Event on the node when a finding starts and when it ends\n" +
				"(needs create and patch on events in the default namespace)"},
			&cli.BoolFlag{Name: "reports", Destination: &o.reports, Usage: "keep the findings in the cluster as OpenReports ClusterReports, for Policy Reporter\n" +
				"(needs the CRD, and the rights kustomize/deploy/reports adds)"},
			&cli.StringFlag{Name: "quarantine", Value: quarantine.Off, Destination: &o.quarantine, Usage: "off, dry-run or on: cordon a GPU node health has judged unusable for --quarantine-after\n" +
				"(with a record of gpuops's on it), and uncordon it once usable for --release-after; never a node someone\n" +
				"else holds or in a driver upgrade. dry-run changes nothing and says what on would do. on needs the rights\n" +
				"kustomize/deploy/quarantine adds, and one replica acts (a Lease); see docs/quarantine.md"},
			&cli.DurationFlag{Name: "quarantine-after", Value: quarantine.DefaultAfter, Destination: &o.settings.After, Usage: "how long a node must be unusable before it is quarantined"},
			&cli.DurationFlag{Name: "release-after", Value: quarantine.DefaultReleaseAfter, Destination: &o.settings.ReleaseAfter, Usage: "how long a quarantined node must be usable again before it is released"},
			&cli.IntFlag{Name: "quarantine-max", Destination: &o.settings.Max, Action: func(*cli.Context, int) error { o.maxSet = true; return nil },
				Usage: "most nodes quarantined at once; past it the fuse trips until gpuops quarantine reset\n" +
					"(default: 10% of the GPU nodes, at least 1)"},
			&cli.BoolFlag{Name: "logs", Destination: &o.Logs, Usage: "read the failing containers' logs on the unusable GPU nodes, as health --logs, and name the host's fault\n" +
				"a known line shows (the node's hint; gpuops_node_host_fault, and --reports); each failure once (a container\n" +
				"is read again only after a restart), at most " + fmt.Sprint(pipeline.LogsPerMinute) + " reads a minute, in the background. Needs get on\n" +
				"pods/log (kustomize/deploy/rbac grants it); without it, one line on stderr"},
			&cli.IntFlag{Name: "quarantine-rate", Value: quarantine.DefaultRate, Destination: &o.settings.Rate, Usage: "most nodes quarantined in a minute"},
			&cli.BoolFlag{Name: "workloads", Destination: &o.workloads, Usage: "also watch every pod of the cluster and export the GPU side of the workloads as gpuops capacity and\n" +
				"gpuops pods judge them: gpuops_gpus{pool,resource,state} and gpuops_gpu_pods_blocked{namespace,cause}. Off by\n" +
				"default: it lists and watches the pods, Failed pods and pod Warning Events of every namespace, and the\n" +
				"ResourceClaims and DeviceClasses (kustomize/deploy/workloads grants them), and keeps every node label"},
		},
	}, o)
}

func (o *serveOptions) Complete(c *cli.Context) error {
	if err := o.Judging.Complete(c); err != nil {
		return err
	}
	o.Opts.Explain, o.Opts.Health, o.Opts.Upgrades = true, true, true // reasons, health and the rollout are metrics too
	o.Opts.Workloads = o.workloads
	return nil
}

func (o *serveOptions) Validate() error {
	if err := o.Judging.Validate(); err != nil {
		return err
	}
	switch {
	case !slices.Contains(quarantine.Modes, o.quarantine):
		return cliopts.UsageError(fmt.Errorf("unknown --quarantine %q (want off, dry-run or on)", o.quarantine))
	case o.settings.After <= 0:
		return cliopts.UsageError(fmt.Errorf("--quarantine-after %s: want a positive duration such as 2m", o.settings.After))
	case o.settings.ReleaseAfter <= 0:
		return cliopts.UsageError(fmt.Errorf("--release-after %s: want a positive duration such as 1m", o.settings.ReleaseAfter))
	case o.settings.Max < 0, o.maxSet && o.settings.Max == 0:
		// 0 is the field's "not given" (the default, 10 %); written, it
		// reads as "none" or "no limit", and would get neither.
		return cliopts.UsageError(fmt.Errorf("--quarantine-max %d: want 1 or more (left out: 10%% of the GPU nodes, at least 1)", o.settings.Max))
	case o.settings.Rate < 1:
		return cliopts.UsageError(fmt.Errorf("--quarantine-rate %d: want 1 or more", o.settings.Rate))
	}
	return nil
}

func (o *serveOptions) Run(ctx context.Context) error {
	cl, err := o.Connect()
	if err != nil {
		return err
	}
	opts := live.Options{Options: o.Opts}
	if o.Logs {
		opts.Logs = pipeline.NewLogReader(cl.Kube, pipeline.LogsPerMinute, func(note string) { fmt.Fprintln(o.ErrOut, note) })
	}
	j, err := live.NewFor(cl, opts, false)
	if err != nil {
		return err
	}
	if o.events {
		nodeevents.Record(ctx, j, cl.Kube)
	}
	if o.reports {
		failed := func(err error) { fmt.Fprintf(o.ErrOut, "%s; retrying\n", words.ErrorLine(err)) }
		if _, err := reportsync.Start(ctx, j, cl.Config, reportsync.Options{Namespace: o.Opts.Namespace, Failed: failed}); err != nil {
			return err
		}
	}
	var collectors []prometheus.Collector
	if act := o.actor(ctx, cl, j); act != nil {
		j.Observe(act.Hooks())
		go func() {
			if err := act.Run(ctx); err != nil {
				fmt.Fprintf(o.ErrOut, "quarantine: %s\n", words.ErrorLine(err))
			}
		}()
		collectors = append(collectors, act)
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
		WatchFailed: func(resource live.Resource, err error) {
			fmt.Fprintf(o.ErrOut, "%s: %s; retrying\n", resource, words.ErrorLine(err))
		},
		Skipped: func(resource live.Resource, without string, err error) {
			fmt.Fprintf(o.ErrOut, "%s: not watched, %s: %s\n", resource, without, words.ErrorLine(err))
		},
	})
	return metrics.Serve(ctx, ln, j, collectors...)
}

// actor is the quarantine's actor as --quarantine asks; nil when off, or
// (said once) when on lacks its rights: serve then stays read-only.
func (o *serveOptions) actor(ctx context.Context, cl *kube.Clients, j *live.Tracker) *actor.Actor {
	if o.quarantine == quarantine.Off {
		return nil
	}
	if o.quarantine == quarantine.On {
		if err := access.Check(ctx, cl.Kube.AuthorizationV1(), actor.Needs(o.Opts.Namespace)); err != nil {
			fmt.Fprintf(o.ErrOut, "quarantine unavailable, serving read-only: %s (kubectl apply -k kustomize/deploy/quarantine)\n", words.ErrorLine(err))
			return nil
		}
	}
	return actor.New(cl.Kube, actor.Options{Mode: o.quarantine, Settings: o.settings, Namespace: o.Opts.Namespace, Log: o.ErrOut, Synced: j.Synced})
}
