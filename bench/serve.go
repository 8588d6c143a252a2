package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

// The serve bench (-serve, go tool task bench:serve): gpuops serve with
// every judgement on, kept running on a fleet under a churn of changes, and
// in the same run its two floors: for memory, the same informers on the
// same objects with the same transforms and nothing else (bench/informers);
// for latency, the API server's own watch, which delivers each measured
// change to any watcher before anything built on a watch can act on it.
//
// The churn is -churn changes a second: one a second is a probe, a deploy
// label flipped with plain kubectl on a node that asks for every operand
// and runs none (so its gpuops_operand_missing series comes and goes with
// the label alone, whatever the DaemonSet controller does), timed from the
// moment kubectl sent its PATCH (its -v=6 log) until the bench's own watch
// of the node sees it (the floor) and until serve's /metrics shows it. The
// rest, in turn: a label no judge reads on a random node (GFD rewrites its
// timestamp label on every node each minute), an annotation on a random
// operand pod, and the dcgm-exporter deploy label flipped on a random
// healthy GPU node (judged; the DaemonSet controller then deletes or makes
// its pod). The flipped labels are set back at the end.
//
// With -workloads, serve runs with --workloads and the informers alone
// with the same pod informer and transform; the churn is pods made and
// deleted in the users' namespaces, one made in five asking a GPU on a
// node that has one free (KWOK then runs them), and the probe is a pod
// asking a GPU, made and deleted in a namespace of its own on a node health
// calls unusable, so that it is stuck there at once (on-unusable-node) and
// its gpuops_gpu_pods_blocked series comes and goes with it, timed from
// the moment its create or delete was sent.

// settleWindow lets a process' start-up garbage go before it is measured.
const settleWindow = 10 * time.Second

type serveBench struct {
	client     kubernetes.Interface // the bench's: no client-side throttling
	watcher    kubernetes.Interface // protobuf, as serve's
	env        []string
	gpuops     string
	informers  string
	apiserver  int // pid
	namespace  string
	fleet      []fleetNode
	work       *workloadFleet // -workloads: the users' pods, their churn and probe
	rate       int
	window     time.Duration // serve's churn
	floorFor   time.Duration // the informers' churn
	probeLabel string
}

// processFigures are one process' figures over its churn window.
type processFigures struct {
	ready        time.Duration // start to /readyz 200 (serve), to synced (informers)
	window       time.Duration // of the churn
	rss, peak    int64         // bytes: median of 1 s samples in the window; VmHWM at its end (start-up included)
	anon         int64         // bytes: RssAnon, median of the same samples
	cpu          float64       // cores over the window
	apiserverCPU float64       // cores over the window
	changes      int           // made in the window
	batches      int           // serve: batches judged in the window
	judged       time.Duration // serve: their total judging time
}

// serveFigures are a fleet's serve section.
type serveFigures struct {
	name           string // the fleet's cluster
	nodes          int
	serve, floor   processFigures
	toMetric       []time.Duration // probe sent → its series in /metrics
	toWatch        []time.Duration // probe sent → the bench's watch sees it
	sentAt         []time.Time     // when each probe of toMetric was sent
	scrapes        []time.Duration // each /metrics scrape while a probe was out
	lost           int             // probes not seen within probeTimeout
	rate           int
	window, floorW time.Duration
	load           [2]string
	workloads      bool // serve --workloads, its probe a pod
}

const probeTimeout = 30 * time.Second

// benchServe measures serve on one fleet. With -pause-simulators the other
// kept fleets' KWOK controllers are stopped meanwhile (with -pause-others
// the whole fleets); this fleet's runs, since the churn's pods need their
// simulated kubelet.
func benchServe(ctx context.Context, cfg config, root, cluster, kubeconfig string, client kubernetes.Interface, env []string, bin func(string) string, server string, fleet []fleetNode, work *workloadFleet, setup []string) (report, error) {
	rep := report{nodes: len(fleet), when: time.Now().UTC(), machine: machine(server), revision: cfg.revision(ctx, root), setup: setup}
	rep.running, rep.pending = expectedPods(fleet)
	if others := others(cfg.clusters(), cluster); cfg.pause && len(others) > 0 {
		resume, note, err := pauseSimulators(ctx, root, others, cfg.stopped(cluster)) // stopped: others, with -pause-others
		if err != nil {
			return rep, err
		}
		defer resume()
		rep.notes = append(rep.notes, strings.Replace(note, "during the rounds", "while this fleet's serve was measured (its own ran)", 1))
	}
	// --reports writes ClusterReports: their CRD first.
	crd, _, err := testcluster.ClusterReportCRD(root)
	if err != nil {
		return rep, err
	}
	if err := sh(ctx, env, "kubectl", "apply", "--server-side", "-f", crd); err != nil {
		return rep, err
	}
	if err := sh(ctx, env, "kubectl", "wait", "--for", "condition=established", "--timeout", "60s", "crd/clusterreports.openreports.io"); err != nil {
		return rep, err
	}
	pid, err := readPID(pidFile(root, cluster, "kube-apiserver"))
	if err != nil {
		return rep, err
	}
	b, err := newServeBench(cfg, kubeconfig, client, env, bin("gpuops"), bin("informers"), pid, fleet, work)
	if err != nil {
		return rep, err
	}
	rep.serve, err = b.run(ctx)
	if rep.serve != nil {
		rep.serve.name = cluster
	}
	return rep, err
}

func newServeBench(cfg config, kubeconfig string, client kubernetes.Interface, env []string, gpuops, informers string, apiserver int, fleet []fleetNode, work *workloadFleet) (*serveBench, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.QPS, rc.Burst = -1, 0
	w, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &serveBench{
		client: client, watcher: w, env: env, gpuops: gpuops, informers: informers, apiserver: apiserver,
		namespace: kube.DefaultNamespace, fleet: fleet, work: work, rate: cfg.churn, window: cfg.churnFor,
		floorFor: min(cfg.churnFor, time.Minute), probeLabel: operand.Lab.DCGMExporter().LabelKey(),
	}, nil
}

// run measures the informers, then serve, on the same churn.
func (b *serveBench) run(ctx context.Context) (*serveFigures, error) {
	f := &serveFigures{nodes: len(b.fleet), rate: b.rate, window: b.window, floorW: b.floorFor, load: [2]string{loadAverage(), ""}, workloads: b.work != nil}
	informers, serve := []string{}, []string{"serve", "--listen", "127.0.0.1:0", "--all-rules", "--reports", "--quarantine=dry-run"}
	if f.workloads {
		informers, serve = append(informers, "-workloads"), append(serve, "--workloads")
	}
	var err error
	logf("serve: the informers alone (the memory floor), %s of churn", b.floorFor)
	f.floor, err = b.process(ctx, b.floorFor, nil, b.informers, informers...)
	if err != nil {
		return nil, fmt.Errorf("the informers: %w", err)
	}
	logf("serve: gpuops serve, %s of churn at %d changes a second", b.window, b.rate)
	f.serve, err = b.process(ctx, b.window, f, b.gpuops, serve...)
	if err != nil {
		return nil, fmt.Errorf("gpuops serve: %w", err)
	}
	f.load[1] = loadAverage()
	return f, nil
}

// process starts a program, waits for it to be ready, lets it settle, then
// churns for window and measures it; with probes (serve), one change a
// second is timed into probes.
func (b *serveBench) process(ctx context.Context, window time.Duration, probes *serveFigures, name string, args ...string) (processFigures, error) {
	var f processFigures
	p, err := start(ctx, b.env, name, args...)
	if err != nil {
		return f, err
	}
	defer p.stop()
	url, err := b.ready(ctx, p.stderr, p.began, &f)
	if err != nil {
		return f, err
	}
	pid := p.cmd.Process.Pid
	if err := sleep(ctx, settleWindow); err != nil {
		return f, err
	}
	judgedBefore, err := b.judgements(ctx, url)
	if err != nil {
		return f, err
	}
	cpuBefore, err := cpuTime(pid)
	if err != nil {
		return f, err
	}
	var samples, anons []int64
	sampled := make(chan error, 1)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				sampled <- nil
				return
			case <-t.C:
			}
			now, _, anon, err := memory(pid)
			if err != nil {
				sampled <- err
				return
			}
			samples, anons = append(samples, now), append(anons, anon)
		}
	}()
	f.apiserverCPU, err = cpuDuring(b.apiserver, func() error {
		var err error
		f.changes, err = b.churn(ctx, window, url, probes)
		return err
	})
	stopSampling()
	if serr := <-sampled; err == nil {
		err = serr
	}
	if err != nil {
		return f, err
	}
	cpuAfter, err := cpuTime(pid)
	if err != nil {
		return f, err
	}
	f.window = window
	f.cpu = (cpuAfter - cpuBefore).Seconds() / window.Seconds()
	if _, f.peak, err = rss(pid); err != nil {
		return f, err
	}
	f.rss, f.anon = median(samples), median(anons)
	judgedAfter, err := b.judgements(ctx, url)
	if err != nil {
		return f, err
	}
	f.batches, f.judged = judgedAfter.count-judgedBefore.count, judgedAfter.sum-judgedBefore.sum
	return f, nil
}

// ready reads the program's stderr until it is ready: serve's /readyz
// answers 200 (polled every 20 ms once it says where it serves), the
// informers say "synced". It returns serve's URL.
func (b *serveBench) ready(ctx context.Context, stderr io.Reader, began time.Time, f *processFigures) (string, error) {
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if lines.Text() == "synced" {
			f.ready = time.Since(began)
			go io.Copy(io.Discard, stderr) //nolint:errcheck // keep the pipe flowing
			return "", nil
		}
		if m := servingLine.FindStringSubmatch(lines.Text()); m != nil {
			go io.Copy(io.Discard, stderr) //nolint:errcheck // keep the pipe flowing
			url := m[1]
			for {
				if body, err := get(ctx, url+"/readyz"); err == nil && body == "ok\n" {
					f.ready = time.Since(began)
					return url, nil
				}
				if err := sleep(ctx, 20*time.Millisecond); err != nil {
					return "", err
				}
			}
		}
	}
	return "", fmt.Errorf("it did not get ready: %v", lines.Err())
}

type judgements struct {
	count int
	sum   time.Duration
}

// judgements reads serve's judging histogram (none for the informers).
func (b *serveBench) judgements(ctx context.Context, url string) (judgements, error) {
	var j judgements
	if url == "" {
		return j, nil
	}
	body, err := get(ctx, url+"/metrics")
	if err != nil {
		return j, err
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, "gpuops_judgement_duration_seconds_count "); ok {
			j.count, err = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(l, "gpuops_judgement_duration_seconds_sum "); ok {
			var s float64
			s, err = strconv.ParseFloat(v, 64)
			j.sum = time.Duration(s * float64(time.Second))
		}
		if err != nil {
			return j, fmt.Errorf("/metrics: %q: %w", l, err)
		}
	}
	return j, nil
}

// churn makes b.rate changes a second for window and returns how many were
// made; with probes, one a second is a timed probe.
func (b *serveBench) churn(ctx context.Context, window time.Duration, url string, probes *serveFigures) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	c, err := b.churner(ctx)
	if err != nil {
		return 0, err
	}
	defer c.restore(context.WithoutCancel(ctx))
	var watched *probeWatch
	kind := b.labelProbe()
	if b.work != nil {
		kind = b.podProbe()
	}
	if probes != nil {
		if watched, err = b.watchProbes(ctx, kind); err != nil {
			return 0, err
		}
	}
	var mu sync.Mutex
	made, failed := 0, error(nil)
	var wg sync.WaitGroup
	background := b.rate
	if probes != nil {
		background--
		wg.Go(func() {
			n, err := b.probe(ctx, url, kind, watched, probes)
			mu.Lock()
			made += n
			if failed == nil {
				failed = err
			}
			mu.Unlock()
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(background))
	defer tick.Stop()
	inFlight := make(chan struct{}, 64) // a change slower than the tick does not hold the next
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			select {
			case inFlight <- struct{}{}:
			default:
				continue // 64 behind: the API server is the limit, not the bench
			}
			change := c.next()
			wg.Go(func() {
				defer func() { <-inFlight }()
				err := change(ctx)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					made++
				case apierrors.IsNotFound(err), ctx.Err() != nil: // a pod the DaemonSet controller just deleted; the end
				case failed == nil:
					failed = err
				}
			})
		}
	}
	wg.Wait()
	return made, failed
}

// churner makes the background changes in turn.
type churner struct {
	b       *serveBench
	rng     *rand.Rand
	nodes   []string // every node
	healthy []string // GPU nodes that run dcgm-exporter
	pods    []string // operand pods, when the churn began
	mu      sync.Mutex
	off     map[string]bool // healthy nodes whose dcgm-exporter label is "false" now
	n       int
	// With the workloads: the nodes users' pods run on, the GPU nodes and
	// the GPUs each has free, and the churn's pods alive, oldest first.
	users, gpuNodes []string
	free            map[string]int64
	offers          map[string]corev1.ResourceName
	live            []workloadPod
	prefix          string // of the churn's pod names: a create cut short at the end of one churn may land after its clean-up
}

// churnAlive is how many of the churn's pods live before it deletes one:
// a pod is deleted seconds after it was made, never before its create
// was sent (at most 64 changes are in flight).
const churnAlive = 200

func (b *serveBench) churner(ctx context.Context) (*churner, error) {
	c := &churner{b: b, rng: rand.New(rand.NewPCG(1, 2)), off: map[string]bool{}}
	for _, f := range b.fleet {
		c.nodes = append(c.nodes, f.name)
		if f.role == gpu && f.operands["dcgm-exporter"] {
			c.healthy = append(c.healthy, f.name)
		}
	}
	pods, err := b.client.CoreV1().Pods(b.namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		c.pods = append(c.pods, p.Name)
	}
	if len(c.pods) == 0 || len(c.healthy) == 0 {
		return nil, errors.New("the fleet has no operand pods or no healthy GPU node: not settled?")
	}
	if b.work != nil {
		c.prefix = fmt.Sprintf("churn-%x", time.Now().Unix()&0xffffff)
		c.free, c.offers = map[string]int64{}, map[string]corev1.ResourceName{}
		for _, f := range b.fleet {
			if f.schedulable() {
				c.users = append(c.users, f.name)
			}
			// Not a DRA node: a pod there would need its claim allocated.
			if name, n := f.offered(); n > b.work.allocated[f.name][name] && name != snapshot.DRADriverName {
				c.gpuNodes = append(c.gpuNodes, f.name)
				c.free[f.name], c.offers[f.name] = n-b.work.allocated[f.name][name], name
			}
		}
	}
	return c, nil
}

// nextPod is the next background change with the workloads: a pod made
// (one in five asking a GPU of a node that has one free), or the oldest
// of the churn's deleted.
func (c *churner) nextPod(n int) func(context.Context) error {
	pods := c.b.client.CoreV1().Pods
	if n%2 == 1 && len(c.live) > churnAlive {
		p := c.live[0]
		c.live = c.live[1:]
		if p.asks != "" {
			c.free[p.node] += p.count
		}
		return func(ctx context.Context) error {
			return pods(p.namespace).Delete(ctx, p.name, *metav1.NewDeleteOptions(0))
		}
	}
	p := workloadPod{name: fmt.Sprintf("%s-%07d", c.prefix, n), namespace: workloadNamespaces[n%len(workloadNamespaces)], node: c.users[c.rng.IntN(len(c.users))]}
	if n/2%5 == 0 {
		for range len(c.gpuNodes) {
			node := c.gpuNodes[c.rng.IntN(len(c.gpuNodes))]
			if c.free[node] > 0 {
				p.node, p.asks, p.count = node, c.offers[node], 1
				c.free[node]--
				break
			}
		}
	}
	c.live = append(c.live, p)
	return func(ctx context.Context) error { _, err := createPod(ctx, c.b.client, p.object()); return err }
}

// next is the next background change.
func (c *churner) next() func(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	n := c.n
	if c.b.work != nil {
		return c.nextPod(n)
	}
	nodes := c.b.client.CoreV1().Nodes()
	switch n % 3 {
	case 0:
		node := c.nodes[c.rng.IntN(len(c.nodes))]
		return func(ctx context.Context) error {
			return patchLabel(ctx, nodes, node, "nvidia.com/gfd.timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		}
	case 1:
		pod := c.pods[c.rng.IntN(len(c.pods))]
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"gpuops.bench/churn":"%d"}}}`, n)
		return func(ctx context.Context) error {
			_, err := c.b.client.CoreV1().Pods(c.b.namespace).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
	default:
		node := c.healthy[c.rng.IntN(len(c.healthy))]
		c.off[node] = !c.off[node]
		value := strconv.FormatBool(!c.off[node])
		return func(ctx context.Context) error { return patchLabel(ctx, nodes, node, c.b.probeLabel, value) }
	}
}

// restore sets back the dcgm-exporter label of every node the churn
// touched: two changes of one node in flight at once may land in either
// order, so what the churn meant last is not always what the node holds (a
// fleet was left a pod short, and the next run waited for it); and
// deletes the churn's pods still alive.
func (c *churner) restore(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for node := range c.off {
		if err := patchLabel(ctx, c.b.client.CoreV1().Nodes(), node, c.b.probeLabel, "true"); err != nil {
			logf("serve: set %s back on %s: %v", c.b.probeLabel, node, err)
		}
	}
	var g errgroup.Group
	g.SetLimit(64)
	for _, p := range c.live {
		g.Go(func() error {
			if err := c.b.client.CoreV1().Pods(p.namespace).Delete(ctx, p.name, *metav1.NewDeleteOptions(0)); err != nil && !apierrors.IsNotFound(err) {
				logf("serve: delete the churn's pod %s: %v", p.key(), err)
			}
			return nil
		})
	}
	g.Wait() //nolint:errcheck // each logs its own
}

type nodePatcher interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error)
}

func patchLabel(ctx context.Context, nodes nodePatcher, node, key, value string) error {
	_, err := nodes.Patch(ctx, node, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)), metav1.PatchOptions{})
	return err
}

// probeWatch is the bench's own watch of the probed nodes: when it saw each
// value of the probe label, per node.
type probeWatch struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time // node → value → first seen
	cond *sync.Cond
}

func (b *serveBench) watchProbes(ctx context.Context, kind probeKind) (*probeWatch, error) {
	w := &probeWatch{seen: map[string]map[string]time.Time{}}
	w.cond = sync.NewCond(&w.mu)
	context.AfterFunc(ctx, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	var synced sync.WaitGroup
	for _, target := range kind.targets {
		lw, obj, value := kind.watch(target)
		synced.Add(1)
		go watchtools.UntilWithSync(ctx, lw, obj, //nolint:errcheck // ends with ctx
			func(cache.Store) (bool, error) { synced.Done(); return false, nil },
			func(e watch.Event) (bool, error) {
				if v, ok := value(e); ok {
					w.saw(target, v)
				}
				return false, nil
			})
	}
	synced.Wait()
	return w, ctx.Err()
}

func (w *probeWatch) saw(node, value string) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[node] == nil {
		w.seen[node] = map[string]time.Time{}
	}
	if _, ok := w.seen[node][value]; !ok {
		w.seen[node][value] = now
	}
	w.cond.Broadcast()
}

// forget clears what was seen of a node before a probe sets value.
func (w *probeWatch) forget(node, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.seen[node], value)
}

// wait is when the watch saw the node's label take value; zero if ctx ended first.
func (w *probeWatch) wait(ctx context.Context, node, value string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ctx.Err() == nil {
		if at, ok := w.seen[node][value]; ok {
			return at
		}
		w.cond.Wait()
	}
	return time.Time{}
}

// probeKind is what the probe flips, one target a second in turn ("on":
// its series shows in serve's /metrics), and how the bench's own watch
// sees it ("true" while on).
type probeKind struct {
	targets []string
	// initially is whether a target is on as the fleet has it.
	initially func(ctx context.Context, target string) (bool, error)
	// flip makes the change and returns when it was sent.
	flip func(ctx context.Context, target string, on bool) (time.Time, error)
	// series is the line serve's /metrics shows while the target is on.
	series func(target string) string
	// watch is the bench's watch of a target and the value an event shows.
	watch func(target string) (*cache.ListWatch, runtime.Object, func(watch.Event) (string, bool))
	// reset leaves the target as the fleet has it.
	reset func(ctx context.Context, target string) error
}

// labelProbe flips the probe label with kubectl on the nodes that ask for
// every operand and run none.
func (b *serveBench) labelProbe() probeKind {
	var nodes []string
	for _, f := range b.fleet {
		if f.role == tainted {
			nodes = append(nodes, f.name)
		}
	}
	return probeKind{
		targets: nodes,
		initially: func(ctx context.Context, node string) (bool, error) {
			n, err := b.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			return err == nil && n.Labels[b.probeLabel] == "true", err
		},
		flip: func(ctx context.Context, node string, on bool) (time.Time, error) {
			return b.kubectlLabel(ctx, node, strconv.FormatBool(on))
		},
		series: func(node string) string {
			return fmt.Sprintf("gpuops_operand_missing{node=%q,operand=%q} 1\n", node, operand.Lab.DCGMExporter().Name)
		},
		watch: func(node string) (*cache.ListWatch, runtime.Object, func(watch.Event) (string, bool)) {
			lw := cache.NewListWatchFromClient(b.watcher.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", node))
			return lw, &corev1.Node{}, func(e watch.Event) (string, bool) {
				n, ok := e.Object.(*corev1.Node)
				if !ok {
					return "", false
				}
				return n.Labels[b.probeLabel], true
			}
		},
		reset: func(ctx context.Context, node string) error {
			return patchLabel(ctx, b.client.CoreV1().Nodes(), node, b.probeLabel, "true")
		},
	}
}

// podProbe makes and deletes a pod asking a GPU, bound to the fleet's
// first node that advertises plain GPUs while health calls it unusable
// (its sharing config not applied): stuck there at once, on-unusable-node.
// One node, one pod: its series counts it alone.
func (b *serveBench) podProbe() probeKind {
	var node string
	for _, f := range b.fleet {
		if code, _ := f.offerCause(); code == health.SharingNotApplied {
			node = f.name
			break
		}
	}
	p := workloadPod{name: "probe", namespace: probeNamespace, node: node, asks: snapshot.GPUResource, count: 1}
	pods := b.client.CoreV1().Pods(probeNamespace)
	gone := func(ctx context.Context) error {
		if err := pods.Delete(ctx, p.name, *metav1.NewDeleteOptions(0)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	return probeKind{
		targets:   []string{node},
		initially: func(ctx context.Context, _ string) (bool, error) { return false, gone(ctx) },
		flip: func(ctx context.Context, _ string, on bool) (time.Time, error) {
			sent := time.Now()
			if !on {
				return sent, gone(ctx)
			}
			_, err := createPod(ctx, b.client, p.object())
			return sent, err
		},
		series: func(string) string {
			return fmt.Sprintf("gpuops_gpu_pods_blocked{cause=%q,namespace=%q} 1\n", workload.OnUnusableNode, probeNamespace)
		},
		watch: func(string) (*cache.ListWatch, runtime.Object, func(watch.Event) (string, bool)) {
			lw := cache.NewListWatchFromClient(b.watcher.CoreV1().RESTClient(), "pods", probeNamespace, fields.OneTermEqualSelector("metadata.name", p.name))
			return lw, &corev1.Pod{}, func(e watch.Event) (string, bool) {
				return strconv.FormatBool(e.Type != watch.Deleted), e.Type != watch.Bookmark && e.Type != watch.Error
			}
		},
		reset: func(ctx context.Context, _ string) error { return gone(ctx) },
	}
}

// probe flips the kind's targets, one a second in turn, until ctx ends,
// and times each flip into f; it returns how many it made.
func (b *serveBench) probe(ctx context.Context, url string, kind probeKind, w *probeWatch, f *serveFigures) (int, error) {
	on := map[string]bool{}
	for _, t := range kind.targets {
		var err error
		if on[t], err = kind.initially(ctx, t); err != nil {
			return 0, err
		}
	}
	defer func() {
		for _, t := range kind.targets {
			if err := kind.reset(context.WithoutCancel(ctx), t); err != nil {
				logf("serve: set %s back: %v", t, err)
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	made := 0
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return made, nil
		case <-tick.C:
		}
		target := kind.targets[i%len(kind.targets)]
		on[target] = !on[target]
		value := strconv.FormatBool(on[target])
		w.forget(target, value)
		sent, err := kind.flip(ctx, target, on[target])
		if ctx.Err() != nil {
			return made, nil
		}
		if err != nil {
			return made, err
		}
		made++
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		shown, err := b.scrapeUntil(pctx, url, kind.series(target), on[target], f)
		watched := w.wait(pctx, target, value)
		cancel()
		if ctx.Err() != nil {
			return made, nil
		}
		if err != nil || shown.IsZero() || watched.IsZero() {
			f.lost++
			continue
		}
		f.toMetric = append(f.toMetric, shown.Sub(sent))
		f.toWatch = append(f.toWatch, watched.Sub(sent))
		f.sentAt = append(f.sentAt, sent)
	}
}

// klogResponse is kubectl -v=6's line for a request's response, with its
// time and how long the request took: structured ("Response" verb="PATCH"
// … milliseconds=N) or, as the kubectl the lab builds writes it, plain
// (PATCH URL 200 OK in N milliseconds).
var klogResponse = regexp.MustCompile(`^I(\d{4} \d\d:\d\d:\d\d\.\d{6}) .*(?:"Response" verb="PATCH" .* milliseconds=(\d+)|\] PATCH \S+ .* in (\d+) milliseconds)`)

// kubectlLabel sets the probe label with plain kubectl and returns when
// kubectl sent its PATCH: its log's response time less the request's.
func (b *serveBench) kubectlLabel(ctx context.Context, node, value string) (time.Time, error) {
	cmd := exec.CommandContext(ctx, "kubectl", "label", "node", node, b.probeLabel+"="+value, "--overwrite", "-v=6")
	cmd.Env = b.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return time.Time{}, fmt.Errorf("kubectl label: %w: %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if m := klogResponse.FindStringSubmatch(l); m != nil {
			at, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
			ms, _ := strconv.Atoi(m[2] + m[3]) // one of them matched
			if err != nil {
				return time.Time{}, err
			}
			now := time.Now()
			at = at.AddDate(now.Year(), 0, 0) // klog leaves out the year
			return at.Add(-time.Duration(ms) * time.Millisecond), nil
		}
	}
	return time.Time{}, fmt.Errorf("kubectl label -v=6: no PATCH response in its log: %s", out)
}

// scrapeUntil scrapes /metrics back to back until the series is there (or
// gone) and returns when the scrape that showed it ended.
func (b *serveBench) scrapeUntil(ctx context.Context, url, series string, present bool, f *serveFigures) (time.Time, error) {
	for ctx.Err() == nil {
		began := time.Now()
		body, err := get(ctx, url+"/metrics")
		if err != nil {
			return time.Time{}, err
		}
		end := time.Now()
		f.scrapes = append(f.scrapes, end.Sub(began))
		if strings.Contains(body, series) == present {
			return end, nil
		}
	}
	return time.Time{}, ctx.Err()
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	i := int(float64(len(d))*p+0.999999) - 1 // nearest rank
	return d[min(max(i, 0), len(d)-1)]
}

// Targets of the serve bench at 5,000 realistic nodes (the issue that asked
// for it): memory and latency.
const (
	rssTarget        = 150 << 20
	floorRatioTarget = 1.3
	p99Target        = time.Second
	watchRatioTarget = 2.0
)

func (f *serveFigures) markdown(level int) string {
	var s strings.Builder
	serve, flags, probe := "`gpuops serve`", "", "a probe made with `kubectl label`, timed from when kubectl sent its PATCH"
	if f.workloads {
		serve, flags = "`gpuops serve --workloads`", " --workloads"
		probe = "a probe: a pod asking a GPU made or deleted on a node health calls unusable (`gpuops_gpu_pods_blocked{cause=\"on-unusable-node\"}`), timed from when its request was sent; the rest pods made and deleted (one made in five asking a GPU)"
	}
	fmt.Fprintf(&s, "\n%s %s under churn: %s (%d nodes)\n\n", strings.Repeat("#", level), serve, f.name, f.nodes)
	fmt.Fprintf(&s, "serve with every judgement on (`--all-rules --reports --quarantine=dry-run%s`; health, the rollout, the offers), "+
		"%d changes a second for %s (the informers alone: %s); one a second %s. "+
		"Load average (1 min) %s before, %s after.\n\n", flags, f.rate, f.window, f.floorW, probe, f.load[0], f.load[1])
	s.WriteString("| | `gpuops serve` | the informers alone (floor) | ratio |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&s, "| start to ready (/readyz; floor: synced) | %.2f s | %.2f s | %.2f |\n", f.serve.ready.Seconds(), f.floor.ready.Seconds(), f.serve.ready.Seconds()/f.floor.ready.Seconds())
	fmt.Fprintf(&s, "| steady RSS (median under churn) | %d MB | %d MB | %.2f |\n", f.serve.rss>>20, f.floor.rss>>20, float64(f.serve.rss)/float64(f.floor.rss))
	fmt.Fprintf(&s, "| of it anonymous (heap, stacks: the binary's pages left out) | %d MB | %d MB | %.2f |\n", f.serve.anon>>20, f.floor.anon>>20, float64(f.serve.anon)/float64(f.floor.anon))
	fmt.Fprintf(&s, "| peak RSS (start-up included) | %d MB | %d MB | %.2f |\n", f.serve.peak>>20, f.floor.peak>>20, float64(f.serve.peak)/float64(f.floor.peak))
	fmt.Fprintf(&s, "| its CPU under churn | %.3f cores | %.3f cores | |\n", f.serve.cpu, f.floor.cpu)
	fmt.Fprintf(&s, "| its CPU per change | %.2f ms | %.2f ms | |\n", perChange(f.serve), perChange(f.floor))
	fmt.Fprintf(&s, "| kube-apiserver CPU meanwhile | %.3f cores | %.3f cores | |\n", f.serve.apiserverCPU, f.floor.apiserverCPU)
	fmt.Fprintf(&s, "| changes made | %d | %d | |\n", f.serve.changes, f.floor.changes)
	if f.serve.batches > 0 {
		fmt.Fprintf(&s, "| batches judged, mean judging time | %d, %.2f ms | — | |\n", f.serve.batches, float64(f.serve.judged.Microseconds())/1000/float64(f.serve.batches))
	}
	s.WriteString("\n| probe → | p50 | p99 | max | n |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(&s, "| its series in serve's /metrics | %s | %s | %s | %d |\n", ms(percentile(f.toMetric, .5)), ms(percentile(f.toMetric, .99)), ms(percentile(f.toMetric, 1)), len(f.toMetric))
	fmt.Fprintf(&s, "| the API server's watch (floor) | %s | %s | %s | %d |\n", ms(percentile(f.toWatch, .5)), ms(percentile(f.toWatch, .99)), ms(percentile(f.toWatch, 1)), len(f.toWatch))
	fmt.Fprintf(&s, "\n- a /metrics scrape took %s (median; the resolution of the serve latency, which counts to the end of the scrape that showed it)\n", ms(percentile(f.scrapes, .5)))
	if f.lost > 0 {
		fmt.Fprintf(&s, "- **%d probes not seen within %s**\n", f.lost, probeTimeout)
	}
	if slow := f.slowest(5); slow != "" {
		fmt.Fprintf(&s, "- the slowest probes, when sent (UTC): %s\n", slow)
	}
	return s.String()
}

// slowest lists the n probes slowest to reach /metrics with when they were
// sent, so that a p99 can be laid beside what else ran at that moment
// (the API server's and KWOK's logs, the churn).
func (f *serveFigures) slowest(n int) string {
	order := make([]int, len(f.toMetric))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.toMetric[b], f.toMetric[a]) })
	var out []string
	for _, i := range order[:min(n, len(order))] {
		out = append(out, fmt.Sprintf("%s (serve %s, watch %s)", f.sentAt[i].UTC().Format("15:04:05"), ms(f.toMetric[i]), ms(f.toWatch[i])))
	}
	return strings.Join(out, ", ")
}

// targets says how a fleet's figures stand against the targets.
func (f *serveFigures) targets() string {
	p99, watch99 := percentile(f.toMetric, .99), percentile(f.toWatch, .99)
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	// The 150 MB is serve's without the workloads: with them, the pods of
	// the whole cluster are watched, and the floor is the target.
	absolute := fmt.Sprintf("steady %d MB, peak %d MB ≤ 150 MB: %s; ", f.serve.rss>>20, f.serve.peak>>20, check(f.serve.rss <= rssTarget && f.serve.peak <= rssTarget))
	if f.workloads {
		absolute = ""
	}
	return fmt.Sprintf("%ssteady %.2f× the floor ≤ %.1f×: %s; p99 %s ≤ 1 s: %s; p99 %.2f× the watch's ≤ %.0f×: %s", absolute,
		float64(f.serve.rss)/float64(f.floor.rss), floorRatioTarget, check(float64(f.serve.rss) <= floorRatioTarget*float64(f.floor.rss)),
		ms(p99), check(p99 <= p99Target), float64(p99)/float64(watch99), watchRatioTarget, check(float64(p99) <= watchRatioTarget*float64(watch99)))
}

func perChange(p processFigures) float64 {
	if p.changes == 0 {
		return 0
	}
	return p.cpu * p.window.Seconds() * 1000 / float64(p.changes)
}
