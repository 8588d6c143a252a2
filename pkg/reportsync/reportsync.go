// Package reportsync keeps gpuops' findings in the cluster as OpenReports
// ClusterReports (pkg/openreports) while serve runs: it takes every batch
// of the live tracker's verdicts from a hook, works out the reports they
// make, and creates, updates and deletes the reports it owns to match, by
// server-side apply under its own field manager. Writes are rate-limited,
// and a burst of verdicts makes one write per report: a report is written
// Delay after it changes, as it stands then, not once per change.
package reportsync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/openreports/reports-api/pkg/client/clientset/versioned"
	typed "github.com/openreports/reports-api/pkg/client/clientset/versioned/typed/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// FieldManager is the field manager of every write.
const FieldManager = "gpuops"

// Owned selects the reports a serve owns: gpuops', of the cluster it runs
// in (reports of other clusters, written there by gpuops --contexts, carry
// openreports.ClusterLabel and are left alone).
var Owned = operand.ManagedByLabel + "=" + openreports.ManagedBy + ",!" + openreports.ClusterLabel

// Options say how to write.
type Options struct {
	Namespace string // the operands' (their pods are results' resources)
	// MaxBytes is where the results are split into a report per node;
	// 0: openreports.MaxBytes.
	MaxBytes int
	// QPS and Burst bound the writes (0: DefaultQPS, DefaultBurst).
	QPS   float32
	Burst int
	// Delay is how long a changed report waits to be written, so that the
	// changes of that time make one write (0: DefaultDelay).
	Delay time.Duration
	// Resync is how often the reports are listed again, to write back one
	// that someone else deleted or changed (0: DefaultResync).
	Resync time.Duration
	// Failed hears of a failed list or write; it is retried with backoff.
	Failed func(error)
}

// The writes' default bound: controller-runtime's default for a
// controller's queue. A report per node at 5,000 nodes is written whole in
// about eight minutes, and a rollout that changes every node's verdict
// costs the API server at most ten small writes a second.
const (
	DefaultQPS   = 10
	DefaultBurst = 100
	// A DaemonSet rollout or a drain changes a node's verdict several times
	// in a second (each pod going, then coming); Policy Reporter needs no
	// fresher view than this.
	DefaultDelay = time.Second
	// A LIST of gpuops' reports every ten minutes: one report of up to 512
	// KiB, or at 5,000 nodes split per node some 25 MB (40 KB/s).
	DefaultResync = 10 * time.Minute
)

// heldChanges is the most changed nodes whose results a batch holds at
// once (see Judged).
const heldChanges = 256

// Sync is the reports of one live tracker.
type Sync struct {
	client  typed.ClusterReportInterface
	opts    Options
	queue   workqueue.TypedRateLimitingInterface[string]
	limiter flowcontrol.RateLimiter
	judged  chan struct{} // closed at the first batch

	// What is held of the reports is their digests, and of each node its
	// verdict (the tracker's, not a copy) and when its results were found:
	// a report is made again from them when it is written, at most QPS a
	// second. Holding the results instead cost some 10 KB a node, a large
	// share of serve's heap (docs/scale.md, "`serve` all day").
	mu      sync.Mutex
	nodes   map[string]node
	total   int  // the bytes of all their results
	split   bool // the results are in a report per node
	desired map[string]wanted
	written map[string]openreports.Sum // what the server holds, as last read or written
}

// node is a node's verdict, as last judged, and its results' times.
type node struct {
	verdict *verdict.Verdict
	found   openreports.Found
	at      int64 // when it was judged, Unix seconds (a result's time)
	bytes   int32
}

// wanted is a report the verdicts make: its digest, and the node it is of
// (empty: the cluster's one report).
type wanted struct {
	digest openreports.Sum
	node   string
}

// Start keeps the reports of j's verdicts current until ctx ends: call it
// before j runs. cfg is the connection's (JSON).
func Start(ctx context.Context, j *live.Tracker, cfg *rest.Config, o Options) (*Sync, error) {
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return StartWith(ctx, j, cs.OpenreportsV1alpha1().ClusterReports(), o), nil
}

// StartWith is Start on a client of its own.
func StartWith(ctx context.Context, j *live.Tracker, client typed.ClusterReportInterface, o Options) *Sync {
	if o.MaxBytes == 0 {
		o.MaxBytes = openreports.MaxBytes
	}
	if o.QPS == 0 {
		o.QPS, o.Burst = DefaultQPS, DefaultBurst
	}
	if o.Delay == 0 {
		o.Delay = DefaultDelay
	}
	if o.Resync == 0 {
		o.Resync = DefaultResync
	}
	s := &Sync{
		client: client, opts: o, judged: make(chan struct{}),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "clusterreports"}),
		limiter: flowcontrol.NewTokenBucketRateLimiter(o.QPS, o.Burst),
		nodes:   map[string]node{}, desired: map[string]wanted{}, written: map[string]openreports.Sum{},
	}
	j.Observe(live.Hooks{Judged: s.Judged})
	context.AfterFunc(ctx, s.queue.ShutDown)
	go s.run(ctx)
	return s
}

// Judged takes a batch of verdicts: the reports they make become the ones
// to write, and those that changed are queued.
func (s *Sync) Judged(b verdict.Batch) {
	if len(b.Changes) == 0 && !b.Initial {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Initial {
		defer close(s.judged)
	}
	// A batch of a few nodes keeps their results between the two passes;
	// a bigger one makes them again from the verdict when a report needs
	// them: the first batch holds every node, and with every node's results
	// at once it was most of serve's live heap at its start.
	changed := map[string]openreports.Node{}
	keep := len(b.Changes) <= heldChanges
	for _, c := range b.Changes {
		name := c.Node()
		s.total -= int(s.nodes[name].bytes)
		if c.After == nil {
			delete(s.nodes, name)
			changed[name] = openreports.Node{Name: name}
			continue
		}
		n := openreports.NodeOf(c.After, s.opts.Namespace, b.Time)
		found := s.nodes[name].found.Carry(n.Results)
		s.nodes[name] = node{verdict: c.After, found: found, at: b.Time.Unix(), bytes: int32(n.Bytes)}
		s.total += n.Bytes
		if keep {
			changed[name] = n
		}
	}
	results := func(name string) openreports.Node {
		if n, ok := changed[name]; ok {
			return n
		}
		return s.results(name)
	}
	// A cluster near the size would flip between one report and many as
	// findings come and go: once split, it stays split down to 3/4 of it.
	was := s.split
	s.split = s.total > s.opts.MaxBytes || s.split && s.total > s.opts.MaxBytes*3/4
	switch {
	case was && s.split:
		// Split before and after: only the changed nodes' reports change,
		// and rebuilding them all at each batch would cost a fleet's worth.
		for _, c := range b.Changes {
			s.set(c.Node(), results(c.Node()))
		}
	case s.split:
		// Newly split (the first batch of a big cluster): every node's
		// report is made and digested in turn, not all at once, so the
		// batch holds one report, not the fleet's.
		old := s.desired
		s.desired = make(map[string]wanted, len(s.nodes))
		for _, name := range slices.SortedFunc(maps.Keys(s.nodes), judge.NaturalCompare) {
			s.set(name, results(name))
		}
		s.queueGone(old)
	default:
		// One report, of at most MaxBytes: made whole.
		names := slices.SortedFunc(maps.Keys(s.nodes), judge.NaturalCompare)
		nodes := make([]openreports.Node, len(names))
		for i, name := range names {
			nodes[i] = results(name)
		}
		old := s.desired
		s.desired = map[string]wanted{}
		for _, r := range openreports.Assemble(nodes, "", false, s.opts.MaxBytes) {
			w := wantedOf(&r)
			if was, ok := old[r.Name]; !ok || was.digest != w.digest {
				s.queue.AddAfter(r.Name, s.opts.Delay)
			}
			s.desired[r.Name] = w
		}
		s.queueGone(old)
	}
}

// queueGone queues the reports of old no longer desired, to be deleted.
func (s *Sync) queueGone(old map[string]wanted) {
	for name := range old {
		if _, ok := s.desired[name]; !ok {
			s.queue.AddAfter(name, s.opts.Delay)
		}
	}
}

func wantedOf(r *v1alpha1.ClusterReport) wanted {
	w := wanted{digest: openreports.Digest(r)}
	if r.Scope != nil {
		w.node = r.Scope.Name
	}
	return w
}

// results are a node's results as last judged, made again from its verdict.
func (s *Sync) results(name string) openreports.Node {
	held, ok := s.nodes[name]
	if !ok {
		return openreports.Node{Name: name}
	}
	n := openreports.NodeOf(held.verdict, s.opts.Namespace, time.Unix(held.at, 0))
	held.found.Carry(n.Results)
	return n
}

// report is the report a wanted one is, made again from what is held.
func (s *Sync) report(name string, w wanted) *v1alpha1.ClusterReport {
	var nodes []openreports.Node
	if w.node != "" {
		nodes = []openreports.Node{s.results(w.node)}
	} else {
		for _, n := range slices.SortedFunc(maps.Keys(s.nodes), judge.NaturalCompare) {
			nodes = append(nodes, s.results(n))
		}
	}
	for _, r := range openreports.Assemble(nodes, "", w.node != "", s.opts.MaxBytes) {
		if r.Name == name {
			return &r
		}
	}
	return nil
}

// set makes a node's report, split per node, what its results say (none
// when it has none or is gone), and queues it if that changes it.
func (s *Sync) set(node string, n openreports.Node) {
	name := openreports.Name("", node)
	was, had := s.desired[name]
	rs := openreports.Assemble([]openreports.Node{n}, "", true, s.opts.MaxBytes)
	switch {
	case len(rs) == 0 && !had:
		return
	case len(rs) == 0:
		delete(s.desired, name)
	default:
		w := wantedOf(&rs[0])
		if had && was.digest == w.digest {
			return
		}
		s.desired[name] = w
	}
	s.queue.AddAfter(name, s.opts.Delay)
}

// run lists the reports the server holds once the first verdicts are in
// (until it can), then writes what is queued, listing again every Resync.
func (s *Sync) run(ctx context.Context) {
	select {
	case <-s.judged:
	case <-ctx.Done():
		return
	}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 5 * time.Minute}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := s.relist(ctx); err != nil {
			s.failed(err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return // ctx ended
	}
	go func() {
		t := time.NewTicker(s.opts.Resync)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.relist(ctx); err != nil && ctx.Err() == nil {
					s.failed(err)
				}
			}
		}
	}()
	for s.next(ctx) {
	}
}

// relist takes the reports the server holds as what is written, and queues
// every report that is there or should be: one someone else deleted or
// changed is written again, one no verdict makes is deleted.
func (s *Sync) relist(ctx context.Context) error {
	written := map[string]openreports.Sum{}
	o := metav1.ListOptions{LabelSelector: Owned, Limit: relistPage}
	for {
		list, err := s.client.List(ctx, o)
		if err != nil {
			return fmt.Errorf("list clusterreports: %w", err)
		}
		for i := range list.Items {
			written[list.Items[i].Name] = openreports.Digest(&list.Items[i])
		}
		if o.Continue = list.Continue; o.Continue == "" {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = written
	for name := range written {
		s.queue.Add(name)
	}
	for name := range s.desired {
		s.queue.Add(name)
	}
	return nil
}

// relistPage is the reports listed at once. Split per node at 5,000
// realistic nodes they are some 25 MB of JSON, which one response would
// hold whole, with the objects decoded from it, at serve's start and at
// each resync.
const relistPage = 250

// next writes one queued report; false once the queue shuts down.
func (s *Sync) next(ctx context.Context) bool {
	name, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(name)
	if err := s.write(ctx, name); err != nil {
		if ctx.Err() == nil {
			s.failed(err)
		}
		s.queue.AddRateLimited(name)
		return true
	}
	s.queue.Forget(name)
	return true
}

// write makes the server's report what the verdicts say: applied, deleted,
// or left as it is when it says the same.
func (s *Sync) write(ctx context.Context, name string) error {
	s.mu.Lock()
	w, ok := s.desired[name]
	var want *v1alpha1.ClusterReport
	if ok {
		want = s.report(name, w)
	}
	have, held := s.written[name]
	s.mu.Unlock()
	var d openreports.Sum
	if want != nil {
		d = openreports.Digest(want)
	}
	switch {
	case want == nil && !held:
		return nil
	case want != nil && held && have == d:
		return nil
	}
	if err := s.limiter.Wait(ctx); err != nil {
		return err
	}
	if want == nil {
		err := s.client.Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete clusterreport %s: %w", name, err)
		}
	} else {
		body, err := json.Marshal(want)
		if err != nil {
			return err
		}
		force := true
		if _, err := s.client.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return fmt.Errorf("apply clusterreport %s: %w", name, err)
		}
	}
	s.mu.Lock()
	if want == nil {
		delete(s.written, name)
	} else {
		s.written[name] = d
	}
	s.mu.Unlock()
	return nil
}

func (s *Sync) failed(err error) {
	if s.opts.Failed != nil {
		s.opts.Failed(err)
	}
}
