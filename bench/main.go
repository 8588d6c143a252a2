// Command bench is `task bench`: on a local KWOK cluster of its own it builds
// a fleet of N GPU nodes (some opted out of operands, some broken: a taint the
// DaemonSets don't tolerate, too little memory for the driver), lets
// `gpuops up` label them and settle the five operand DaemonSets, then times
// side by side, in rounds, the API server's floor (bench/floor), gpuops audit
// and matrix, operand-audit.sh and the kubectl+jq recipe (bench/recipe.sh). It
// checks every output against the fleet's expected audit, prints a table with
// ratios to the floor and appends it to the results file (-results).
//
//	go run ./bench -n 5000       # from the repository root, tools built
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuops/gpuops/pkg/kube"
)

type config struct {
	nodes       int
	rounds      int
	scripts     int    // timed rounds of the scripts (slow at 5,000 nodes); -1: rounds
	recipe      bool   // also time the kubectl+jq recipe
	script      bool   // also time operand-audit.sh
	baseline    string // other gpuops binaries whose audit, matrix and health are timed beside
	gpuops      string // a gpuops binary to measure instead of one built from the tree
	cluster     string
	keep        bool // leave the cluster running at the end
	reuse       bool // measure a fleet an earlier -keep run left, without setup
	up          bool // settle the fleet with `gpuops up` (and time it)
	upRuns      int  // rounds of `gpuops up` against its floor (with up)
	watcher     bool // also measure gpuops serve (bench/watcher.go)
	small       bool // lab-sized objects: nodes and pod templates not dressed (fleettest)
	pause       bool // stop every measured fleet's KWOK controller during the rounds (simulators.go)
	pauseOthers bool // and the fleets not being measured whole
	restart     bool // restart each kept fleet's API server before its rounds (apiserver.go)
	offers      bool // the fleet dressed as an install sharing, partitioning and DRA-publishing GPUs (offers.go)
	serve       bool // measure gpuops serve under churn instead of the judges (serve.go)
	churn       int  // changes a second, with serve
	churnFor    time.Duration
	workloads   int // users' pods that have not ended (workloads.go)
	results     string
}

// revision names the gpuops measured: the tree's, or the -gpuops binary
// given instead.
func (c config) revision(ctx context.Context, root string) string {
	if c.gpuops != "" {
		return "binary " + filepath.Base(c.gpuops) + " (-gpuops), beside the tree at " + revision(ctx, root)
	}
	return revision(ctx, root)
}

// clusters are the fleets the run measures, in turn.
func (c config) clusters() []string { return strings.Split(c.cluster, ",") }

// stopped are the fleets stopped whole while measured is: with
// -pause-others every other one, else none.
func (c config) stopped(measured string) []string {
	if !c.pauseOthers {
		return nil
	}
	return others(c.clusters(), measured)
}

func main() {
	var cfg config
	flag.IntVar(&cfg.nodes, "n", 1000, "number of nodes in the fleet")
	flag.IntVar(&cfg.rounds, "rounds", 5, "timed rounds per contender (after one warm-up)")
	flag.IntVar(&cfg.scripts, "script-rounds", -1, "timed rounds of operand-audit.sh and the kubectl+jq recipe, without their warm-up when fewer than -rounds (-1: as -rounds); they take minutes a run at 5,000 real-sized nodes")
	flag.StringVar(&cfg.baseline, "baseline", "", "another gpuops binary (say, built from the commit before a change) whose audit, matrix and health are timed in the same rounds, as \"baseline …\"; several, separated by commas, each as LABEL=PATH are timed as \"LABEL …\"")
	flag.StringVar(&cfg.gpuops, "gpuops", "", "measure this gpuops binary instead of building ./cmd/gpuops (with -serve: serve of another build, one run after the other)")
	flag.BoolVar(&cfg.script, "script", true, "also time operand-audit.sh: its jq holds 6 GB at 5,000 real-sized nodes, too much beside four kept fleets")
	flag.BoolVar(&cfg.recipe, "recipe", true, "also time the kubectl+jq recipe (bench/recipe.sh): about 10 minutes a run at 5,000 real-sized nodes")
	flag.StringVar(&cfg.cluster, "cluster", "gpuops-scale", "name of the bench's own KWOK cluster (hack/cluster.sh); with -reuse, several names separated by commas measure their fleets one after the other in one run, with one table of the judges against each fleet's floor")
	flag.BoolVar(&cfg.keep, "keep", false, "leave the cluster running at the end")
	flag.BoolVar(&cfg.reuse, "reuse", false, "measure the fleet a -keep run left (no setup, no `gpuops up` figure; its size is the cluster's node count, -n is not used)")
	flag.BoolVar(&cfg.up, "up", true, "label the nodes and apply the DaemonSets with `gpuops up`, timed (false: label the nodes at creation and apply the DaemonSets directly, quicker at 5,000 nodes)")
	flag.IntVar(&cfg.upRuns, "up-rounds", 0, "with -up: time `gpuops up` against its floor (the DaemonSets applied with kubectl to labelled nodes, until ready) in this many interleaved rounds")
	flag.BoolVar(&cfg.small, "small", false, "a fleet of lab-sized objects: nodes with only their lab labels and the DaemonSets' pods as the bases render them (default: dressed as a cloud GPU fleet's, internal/fleettest)")
	flag.BoolVar(&cfg.watcher, "watcher", true, "also measure `gpuops serve` against `gpuops audit` run back to back (CPU, memory, label change to verdict)")
	flag.BoolVar(&cfg.pause, "pause-simulators", false, "with -reuse: stop the KWOK controllers of every fleet named by -cluster while a fleet's rounds run (SIGSTOP, then SIGCONT), and wait for them to catch up before the next fleet's: the simulated kubelets' work is the bench machine's, not the API server's (bench/simulators.go)")
	flag.BoolVar(&cfg.pauseOthers, "pause-others", false, "with -pause-simulators: also stop the fleets not being measured whole, their control planes too (etcd, API server, controller manager, scheduler), while a fleet is measured: their API servers' own work is not the measured cluster's (bench/simulators.go)")
	flag.BoolVar(&cfg.restart, "restart-apiserver", false, "with -reuse: restart each fleet's API server before its rounds (the same binary, flags and environment, its etcd untouched): one that has just built a fleet holds what the build churned through, gigabytes the machine's page cache then lacks (bench/apiserver.go)")
	flag.BoolVar(&cfg.offers, "offers", false, "dress the fleet as a GPU Operator install whose nodes offer their GPUs in every way health reads: a ClusterPolicy naming a sharing ConfigMap and a MIG ConfigMap, a tenth of the nodes time-slicing, a tenth MIG-partitioned, a tenth running the DRA kubelet plugin with a ResourceSlice of 8 GPUs (bench/offers.go); the floor then also lists the ResourceSlices. With -reuse: every fleet must have been built with -offers (a fleet that was is measured with its offers either way)")
	flag.BoolVar(&cfg.serve, "serve", false, "measure `gpuops serve` with every judgement on under a churn of changes, against the same informers alone (the memory floor) and the API server's watch (the latency floor), instead of the judges (bench/serve.go)")
	flag.IntVar(&cfg.churn, "churn", 20, "with -serve: changes a second, one of them a timed probe made with kubectl")
	flag.DurationVar(&cfg.churnFor, "churn-for", 5*time.Minute, "with -serve: how long serve is measured under the churn (the informers alone: at most a minute)")
	flag.IntVar(&cfg.workloads, "workloads", 0, "with -offers: that many users' pods that have not ended, one in five asking GPUs, and a few stuck (bench/workloads.go), made or completed on a kept fleet; times gpuops capacity, pods and collect against their floors and health, capacity and pods --from a bundle against themselves live; with -serve, serve --workloads under a churn of pod creations and deletions")
	flag.StringVar(&cfg.results, "results", "bench/RESULTS.md", "file the results are appended to (empty: none)")
	flag.Parse()
	// Checked before any setup: a bad flag found after minutes of fleet
	// building would waste them.
	if cfg.rounds < 1 || cfg.scripts == 0 {
		fmt.Fprintln(os.Stderr, "bench: error: -rounds and -script-rounds: at least one timed round each")
		os.Exit(2)
	}
	if cfg.serve && (cfg.churn < 2 || cfg.churnFor < 10*time.Second) {
		fmt.Fprintln(os.Stderr, "bench: error: -serve: -churn of at least 2 changes a second (one is the probe) for at least 10s")
		os.Exit(2)
	}
	if cfg.workloads < 0 {
		fmt.Fprintln(os.Stderr, "bench: error: -workloads: a count of pods, 0 for none")
		os.Exit(2)
	}
	if cfg.pause && !cfg.reuse {
		fmt.Fprintln(os.Stderr, "bench: error: -pause-simulators pauses kept fleets: add -reuse")
		os.Exit(2)
	}
	if cfg.restart && !cfg.reuse {
		fmt.Fprintln(os.Stderr, "bench: error: -restart-apiserver restarts kept fleets' API servers: add -reuse")
		os.Exit(2)
	}
	if cfg.pauseOthers && !cfg.pause {
		fmt.Fprintln(os.Stderr, "bench: error: -pause-others stops the other fleets with the simulators: add -pause-simulators")
		os.Exit(2)
	}
	if strings.Contains(cfg.cluster, ",") && !cfg.reuse {
		fmt.Fprintln(os.Stderr, "bench: error: several -cluster names measure fleets that -keep runs left: add -reuse")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: error: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run(ctx context.Context, cfg config) (err error) {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "cluster.sh")); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	tmp, err := os.MkdirTemp("", "gpuops-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "PATH="+filepath.Join(root, ".lab", "bin")+":"+os.Getenv("PATH"))

	logf("building gpuops and the floor program")
	bin := func(name string) string {
		if name == "gpuops" && cfg.gpuops != "" {
			return cfg.gpuops
		}
		return filepath.Join(tmp, name)
	}
	if cfg.gpuops == "" {
		if err := sh(ctx, env, "go", "build", "-o", bin("gpuops"), "./cmd/gpuops"); err != nil {
			return err
		}
	}
	if err := sh(ctx, env, "go", "build", "-o", bin("floor"), "./bench/floor"); err != nil {
		return err
	}
	if err := sh(ctx, env, "go", "build", "-o", bin("informers"), "./bench/informers"); err != nil {
		return err
	}

	var reps []report
	var failed error
	for _, name := range cfg.clusters() {
		rep, err := benchFleet(ctx, cfg, name, root, env, bin, tmp)
		if err != nil {
			failed = fmt.Errorf("cluster %s: %w", name, err)
			break
		}
		reps = append(reps, rep)
	}
	if len(reps) == 0 {
		return failed
	}
	// What was measured is kept when a later fleet fails: minutes of rounds.
	text := reps[0].markdown(2)
	if len(reps) > 1 || failed != nil {
		text = fleetsMarkdown(reps)
	}
	if failed != nil {
		text += fmt.Sprintf("\n- the run stopped there: %v\n", failed)
	}
	fmt.Print(text)
	if cfg.results != "" {
		if err := appendResults(cfg.results, text); err != nil {
			return err
		}
	}
	return failed
}

// benchFleet sets up (or, with -reuse, finds) the fleet of one cluster and
// measures every contender on it.
func benchFleet(ctx context.Context, cfg config, cluster, root string, env []string, bin func(string) string, tmp string) (rep report, err error) {
	logf("starting cluster %s", cluster)
	script := filepath.Join(root, "hack", "cluster.sh")
	// Heartbeats 30 times slower than kwokctl's default (a lease renewed
	// every 5 minutes, not 50 s): the two cores simulate every node's
	// kubelet, and 5,000 nodes' leases alone would be 100 writes a second.
	// The controller manager's grace period stretches alike. The judges and
	// `up` read and write the same objects either way.
	if err := sh(ctx, append(env, "LAB_NODES=", "LAB_HEARTBEAT_FACTOR=30"), "bash", script, "up", cluster); err != nil {
		return rep, err
	}
	if !cfg.keep && !cfg.reuse {
		defer func() {
			logf("deleting cluster %s", cluster)
			if derr := sh(context.Background(), env, "bash", script, "down", cluster); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	out, err := exec.CommandContext(ctx, "bash", script, "kubeconfig", cluster).Output()
	if err != nil {
		return rep, fmt.Errorf("kubeconfig of %s: %w", cluster, err)
	}
	kubeconfig := strings.TrimSpace(string(out))
	env = append(env, "KUBECONFIG="+kubeconfig)
	var restarted time.Duration
	if cfg.restart {
		if restarted, err = restartAPIServer(ctx, root, cluster, kubeconfig); err != nil {
			return rep, err
		}
	}
	client, server, err := benchClient(kubeconfig)
	if err != nil {
		return rep, err
	}

	fleet := plan(cfg.nodes, cfg.offers)
	offers := cfg.offers
	var setup []string
	var ups *upRounds
	if cfg.reuse {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return rep, err
		}
		if len(nodes.Items) == 0 {
			return rep, fmt.Errorf("-reuse: cluster %s has no nodes: leave a fleet with -keep first", cluster)
		}
		if offers, err = dressedForOffers(ctx, kubeconfig); err != nil {
			return rep, err
		}
		if cfg.offers && !offers {
			return rep, fmt.Errorf("-offers: cluster %s's fleet was built without offers: build it with -offers -keep", cluster)
		}
		fleet = plan(len(nodes.Items), offers)
		running, pending := expectedPods(fleet)
		logf("waiting for %d Running and %d Pending pods", running, pending)
		if err := waitPods(ctx, client, kube.DefaultNamespace, running, pending); err != nil {
			return rep, err
		}
		setup = append(setup, "fleet reused from an earlier run: `gpuops up` not timed")
		if cfg.restart {
			setup = append(setup, fmt.Sprintf("its API server restarted before the rounds, its etcd kept (`-restart-apiserver`): ready again in %.1f s", restarted.Seconds()))
		}
	} else if setup, ups, err = buildFleet(ctx, client, fleet, cfg, env, bin("gpuops"), tmp, kubeconfig); err != nil {
		return rep, err
	}

	work, err := planWorkloads(fleet, cfg.workloads)
	if err != nil {
		return rep, err
	}
	bundle := ""
	if cfg.workloads > 0 {
		if !offers {
			return rep, fmt.Errorf("-workloads: cluster %s's fleet was built without offers: build it with -offers", cluster)
		}
		logf("the workloads: %d pods planned", len(work.pods))
		made, err := applyWorkloads(ctx, client, work)
		if err != nil {
			return rep, err
		}
		setup = append(setup, fmt.Sprintf("the workloads (-workloads %d: %d pods, the stuck few among them): %s", cfg.workloads, len(work.pods), made))
	}
	if cfg.workloads > 0 && !cfg.serve {
		bundle = filepath.Join(tmp, "bundle.json")
		start := time.Now()
		if err := sh(ctx, env, bin("gpuops"), "-n", kube.DefaultNamespace, "collect", "-o", bundle); err != nil {
			return rep, err
		}
		setup = append(setup, fmt.Sprintf("the bundle the --from contenders read: `gpuops collect -o bundle.json`, %.1f s", time.Since(start).Seconds()))
	}
	shape, err := fleetShape(ctx, client, kube.DefaultNamespace, fleet[0].name, offers)
	if err != nil {
		return rep, err
	}
	setup = append(setup, shape.String())
	if cfg.serve {
		return benchServe(ctx, cfg, root, cluster, kubeconfig, client, env, bin, server, fleet, work, setup)
	}
	contenders, notes := lineUp(root, bin, fleet, work, bundle, offers, cfg.script, cfg.recipe)
	if cfg.baseline != "" {
		contenders = append(contenders, baselines(cfg.baseline, contenders)...)
	}
	resume := func() {}
	if cfg.pause {
		var note string
		if resume, note, err = pauseSimulators(ctx, root, cfg.clusters(), cfg.stopped(cluster)); err != nil {
			return rep, err
		}
		defer resume() // on an early return too; twice does no harm
		notes = append(notes, note)
	}
	logf("measuring %d contenders, %d rounds each", len(contenders), cfg.rounds)
	load := loadAverage()
	scripts := cfg.scripts
	if scripts < 0 {
		scripts = cfg.rounds
	}
	results, err := measure(ctx, contenders, append(env, "ROSTER="+rosterJSON()), tmp, cfg.rounds, scripts, func(s string) { logf("%s", s) })
	resume()
	if err != nil {
		return rep, err
	}
	running, pending := expectedPods(fleet)
	rep = report{
		nodes: len(fleet), running: running, pending: pending, rounds: cfg.rounds, shape: shape,
		when: time.Now().UTC(), machine: machine(server), revision: cfg.revision(ctx, root),
		results: results, setup: setup, notes: notes, load: [2]string{load, loadAverage()}, up: ups,
	}
	if cfg.watcher {
		if rep.watcher, err = benchWatcher(ctx, root, cluster, client, env, bin("gpuops"), fleet, cfg.rounds); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// benchClient is a client for setting the fleet up quickly: many concurrent
// creates, no client-side throttling.
func benchClient(kubeconfig string) (kubernetes.Interface, string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", err
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = runtime.ContentTypeProtobuf // the API server's cheaper encoding, for 50,000 pods' writes
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		return nil, "", fmt.Errorf("server version: %w", err)
	}
	return c, v.GitVersion, nil
}

// buildFleet creates the fleet and settles it; it returns what each step
// took, and the rounds of up against its floor if cfg asks for them.
func buildFleet(ctx context.Context, c kubernetes.Interface, fleet []fleetNode, cfg config, env []string, gpuops, tmp, kubeconfig string) ([]string, *upRounds, error) {
	up := cfg.up
	have, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, nil, err
	}
	if len(have.Items) > 0 {
		return nil, nil, fmt.Errorf("the bench cluster already has nodes: delete it first (hack/cluster.sh down NAME) or pass -reuse")
	}
	var first, late []fleetNode
	for _, f := range fleet {
		if f.role == lowMemory {
			late = append(late, f)
		} else {
			first = append(first, f)
		}
	}
	var notes []string
	step := func(what string, do func() error) error {
		logf("%s", what)
		start := time.Now()
		err := do()
		took := time.Since(start)
		if err != nil {
			return err
		}
		logf("%s: %.1f s", what, took.Seconds())
		notes = append(notes, fmt.Sprintf("%s: %.1f s", what, took.Seconds()))
		return nil
	}
	err = step(fmt.Sprintf("create %d nodes (64 concurrent creates)", len(first)), func() error {
		return createNodes(ctx, c, objects(first, !up, !cfg.small))
	})
	if err != nil {
		return nil, nil, err
	}
	var ups *upRounds
	if up {
		spec, err := labSpec(kube.DefaultNamespace, first)
		if err != nil {
			return nil, nil, err
		}
		labFile := filepath.Join(tmp, "fleet-lab.yaml")
		if err := os.WriteFile(labFile, spec, 0o644); err != nil {
			return nil, nil, err
		}
		if cfg.upRuns > 0 {
			if ups, err = upVsFloor(ctx, c, first, cfg.upRuns, env, gpuops, labFile, tmp); err != nil {
				return nil, nil, err
			}
			notes = append(notes, fmt.Sprintf("`gpuops up` settled the fleet, in the last of %d rounds against its floor (table above)", cfg.upRuns))
		} else {
			what := fmt.Sprintf("`gpuops up` (label %d nodes, apply 5 DaemonSets, wait until settled)", len(first))
			start := time.Now()
			err = step(what, func() error {
				return sh(ctx, env, gpuops, "up", "--lab", labFile, "--workdir", filepath.Join(tmp, "workdir"), "--timeout", "30m")
			})
			if err != nil {
				// The judges can still be measured once the pods are there.
				notes = append(notes, fmt.Sprintf("%s: **failed** after %.1f s: %v", what, time.Since(start).Seconds(), err))
			}
		}
	} else {
		err = step("apply the 5 DaemonSets (server-side apply)", func() error { return applyDaemonSets(ctx, c, kube.DefaultNamespace, !cfg.small) })
		if err != nil {
			return nil, nil, err
		}
	}
	if cfg.offers {
		err = step("the offers: the ClusterPolicy CRD, a policy, 2 ConfigMaps, the DRA kubelet plugin's DaemonSet and ResourceSlices", func() error {
			return applyOffers(ctx, c, kubeconfig, kube.DefaultNamespace, fleet)
		})
		if err != nil {
			return nil, nil, err
		}
	}
	running, pending := expectedPods(fleet)
	err = step(fmt.Sprintf("add %d low-memory nodes (deploy labels set), wait for %d Running and %d Pending pods", len(late), running, pending), func() error {
		if err := createNodes(ctx, c, objects(late, true, !cfg.small)); err != nil {
			return err
		}
		return waitPods(ctx, c, kube.DefaultNamespace, running, pending)
	})
	return notes, ups, err
}

func objects(fleet []fleetNode, withDeployLabels, dressed bool) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(fleet))
	for _, f := range fleet {
		out = append(out, f.object(withDeployLabels, dressed))
	}
	return out
}

// sh runs a command with its output on stderr.
func sh(ctx context.Context, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
