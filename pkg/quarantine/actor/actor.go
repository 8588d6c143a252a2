// Package actor is serve --quarantine: it follows a live tracker's verdicts
// (pkg/live), decides with pkg/quarantine what to do, and does it on the
// cluster (cluster.go) or, in dry-run, only says it. With --quarantine=on
// one replica acts, the holder of a Lease (client-go leaderelection); the
// others keep exporting. What gpuops holds is read back from the nodes
// (their record) and the fuse from its ConfigMap, never kept in memory
// alone: a restarted or replaced serve goes on where the last one stopped.
package actor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/promtext"
	"github.com/gpuops/gpuops/pkg/quarantine"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/words"
)

// Options say how the actor acts.
type Options struct {
	Mode      string // quarantine.DryRun or quarantine.On
	Settings  quarantine.Settings
	Namespace string // of the Lease, the fuse's ConfigMap and the Events
	// Identity names this replica in the Lease; the host name and process
	// ID when empty.
	Identity string
	Log      io.Writer // one line per action, refusal and change of leader
	// Synced is the tracker's Synced.
	Synced func() map[live.Resource]bool
}

// Lease timings: client-go's usual ones. A replica that stops renewing is
// replaced within LeaseDuration.
const (
	LeaseDuration = 15 * time.Second
	RenewDeadline = 10 * time.Second
	RetryPeriod   = 2 * time.Second
)

// tick is how often the leader decides, besides after each batch: the
// timers (--quarantine-after, --release-after, the rate) run out between
// batches.
const tick = time.Second

// Actor is serve --quarantine.
type Actor struct {
	opts    Options
	cluster cluster

	mu sync.Mutex
	// nodes are the GPU nodes a decision may touch, from the verdicts:
	// those not Idle, or in the overlay. An idle node, most of a fleet, is
	// only counted (gpuNodes): holding every one was a visible share of
	// serve's live heap (docs/scale.md, "`serve` all day").
	nodes    map[string]quarantine.Node
	gpuNodes int
	// inputs are the last input's nodes, made again in place: Decide keeps
	// none of them.
	inputs  []quarantine.Node
	judged  bool      // the first batch came
	failed  time.Time // the last failed list or watch
	skipped []string  // resources not watched (forbidden)
	leading bool
	lost    bool // it led before: the lease was lost
	fuse    quarantine.Fuse
	// overlay is what gpuops holds in its own eyes, by node, until the
	// verdicts say so too: in dry-run for ever (nothing is written), with
	// on until the node's write comes back through the watch. A nil entry
	// is a node released.
	overlay map[string]*ledger.Entry
	last    quarantine.Decision
	wake    chan struct{}
	counts  map[string]float64 // actions done (or, dry-run, that would be), by kind

	scrape sync.Mutex // one scrape at a time writes text
	text   *promtext.Table[held]
}

// New makes the actor of a tracker; call Observe's hooks before it runs.
func New(client kubernetes.Interface, opts Options) *Actor {
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	return &Actor{opts: opts, cluster: cluster{client: client, namespace: opts.Namespace}, nodes: map[string]quarantine.Node{},
		overlay: map[string]*ledger.Entry{}, wake: make(chan struct{}, 1), counts: map[string]float64{},
		text: promtext.NewTable(families...)}
}

// Hooks are the tracker's hooks the actor follows.
func (a *Actor) Hooks() live.Hooks {
	return live.Hooks{Judged: a.take, WatchFailed: a.watchFailed, Skipped: a.skip}
}

func (a *Actor) watchFailed(live.Resource, error) {
	a.mu.Lock()
	a.failed = time.Now()
	a.mu.Unlock()
}

// skip notes a resource the verdicts go without because the user may not
// list it: then they are not whole. One the server does not serve
// (no DRA on the cluster) takes nothing from it. The driver upgrade
// controller's Events and the ControllerRevisions only say how a driver
// upgrade goes, and the quarantine leaves every node in a driver upgrade
// alone (its state label): without them the health verdict is whole.
func (a *Actor) skip(resource live.Resource, _ string, err error) {
	if !apierrors.IsForbidden(err) || resource == live.UpgradeEvents || resource == live.ControllerRevisions {
		return
	}
	a.mu.Lock()
	a.skipped = append(a.skipped, string(resource))
	a.mu.Unlock()
}

// take takes in a batch: each GPU node's verdict, and since when it is
// what it is.
func (a *Actor) take(b verdict.Batch) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.judged = true
	// The decision, a pass over every GPU node, is made again at once only
	// when what it reads of a node changed (usable, cause, holder, marks,
	// upgrade state); a verdict changed otherwise (under a churn of deploy
	// labels, most batches) waits for the tick, and no timer of a quarantine
	// is shorter than it.
	decide := b.Initial
	for _, c := range b.Changes {
		name := c.Node()
		a.gpuNodes += int(bool01(c.After.GPU()) - bool01(c.Before.GPU()))
		h := c.After
		if !h.GPU() {
			if _, ok := a.nodes[name]; ok {
				delete(a.nodes, name)
				decide = true
			}
			continue
		}
		n := quarantine.Of(name, h.Health, b.Time)
		if h.Upgrade != nil {
			n.UpgradeState = h.Upgrade.State
		}
		if o, ok := a.overlay[name]; ok && (o == nil) == (n.Held == nil) && (o == nil || n.Held.Actor == o.Actor) {
			delete(a.overlay, name) // the verdicts agree now
		}
		was, ok := a.nodes[name]
		if _, overlaid := a.overlay[name]; n.Idle() && !overlaid {
			// Not held: when it turns unusable or is taken out of
			// service it counts from then, as below.
			if ok {
				delete(a.nodes, name)
				decide = true
			}
			continue
		}
		if ok && was.Usable == n.Usable && (was.Held == nil) == (n.Held == nil) {
			// The same verdict, in or out of service as it was: it
			// counts from when it began. A node back in service counts
			// afresh, so that one a person released is not quarantined
			// again at once.
			n.Since = was.Since
			decide = decide || !reflect.DeepEqual(was, n)
		} else {
			decide = true
		}
		a.nodes[name] = n
	}
	if decide {
		a.poke()
	}
}

func (a *Actor) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run acts until ctx ends: in dry-run at once (nothing is written, every
// replica says what it would do), with on while it holds the Lease.
func (a *Actor) Run(ctx context.Context) error {
	if a.opts.Mode == quarantine.DryRun {
		a.lead(ctx)
		return nil
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, a.opts.Namespace, operand.QuarantineLease,
		a.cluster.client.CoreV1(), a.cluster.client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: a.opts.Identity})
	if err != nil {
		return err
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: LeaseDuration, RenewDeadline: RenewDeadline, RetryPeriod: RetryPeriod,
		ReleaseOnCancel: true, Name: operand.QuarantineLease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: a.lead,
			OnStoppedLeading: func() { a.logf("quarantine: %s no longer leads", a.opts.Identity) },
			OnNewLeader: func(id string) {
				if id != a.opts.Identity {
					a.logf("quarantine: %s leads; this replica only exports", id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	// leaderelection logs a failed renewal through klog: the actor says it
	// in its own line (OnStoppedLeading).
	ctx = klog.NewContext(ctx, logr.Discard())
	for ctx.Err() == nil { // a lost lease: stand again
		le.Run(ctx)
	}
	return nil
}

// lead decides and acts until ctx ends (or the lease is lost). Leading
// again after a lost lease counts as a failure of the watch: the lease is
// lost when the API server did not answer for RenewDeadline, and a watch
// may come back from such a silence without an error and with its events
// still on the way.
func (a *Actor) lead(ctx context.Context) {
	a.logf("quarantine: %s acts (%s)", a.opts.Identity, a.opts.Mode)
	a.mu.Lock()
	a.leading = true
	a.overlay = map[string]*ledger.Entry{}
	if a.lost {
		a.failed = time.Now()
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.leading, a.lost = false, true
		a.mu.Unlock()
	}()
	// The fuse is the cluster's with on; a dry run keeps its own, since it
	// holds nothing the cluster knows of.
	if a.opts.Mode == quarantine.On {
		if err := a.readFuse(ctx); err != nil {
			a.logf("quarantine: read the fuse: %s; retrying", words.ErrorLine(err))
		}
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.wake:
		}
		a.step(ctx)
	}
}

// readFuse reads the fuse from the cluster; an error leaves it tripped, so
// that nothing is done on a fuse not read.
func (a *Actor) readFuse(ctx context.Context) error {
	f, err := Fuse(ctx, a.cluster.client, a.opts.Namespace)
	if err != nil {
		f = quarantine.Fuse{Tripped: true, Reason: "the fuse could not be read: " + words.ErrorLine(err)}
	}
	a.mu.Lock()
	if a.fuse.Tripped && !f.Tripped {
		a.logf("quarantine: the fuse was reset")
	}
	a.fuse = f
	a.mu.Unlock()
	return err
}

// step decides once and carries the decision out.
func (a *Actor) step(ctx context.Context) {
	now := time.Now()
	if a.opts.Mode == quarantine.On && a.fuseTripped() {
		_ = a.readFuse(ctx) // reset by a person (quarantine reset)?
	}
	a.mu.Lock()
	if !a.judged {
		a.mu.Unlock()
		return
	}
	d := quarantine.Decide(a.input(now))
	a.last = d
	a.mu.Unlock()
	for _, act := range d.Quarantine {
		since := now
		held := &ledger.Entry{Actor: ledger.Gpuops, Cordoned: true, Since: &since, Cause: ledger.Record{Code: act.Code, Operand: act.Operand}.CauseString()}
		a.do(ctx, "quarantine", act.Node, held, func() error { return a.cluster.quarantine(ctx, act, now) }, act.Code+" "+act.Operand)
	}
	for _, r := range d.Release {
		a.do(ctx, "release", r.Node, nil, func() error { return a.cluster.release(ctx, r) }, "usable again")
	}
	for _, n := range d.Forget {
		a.do(ctx, "forget", n, nil, func() error { return a.cluster.forget(ctx, n) }, "its record is stale")
	}
	if d.Trip != "" {
		a.mu.Lock()
		a.fuse = quarantine.Fuse{Tripped: true, Since: now, Reason: d.Trip}
		a.mu.Unlock()
		a.do(ctx, "trip", "the fuse", nil, func() error { return a.cluster.trip(ctx, d.Trip, now) }, d.Trip)
	}
}

// do carries out one action (in dry-run, only its record in the overlay:
// the node then held, or with held nil released) and logs it. The overlay
// is set before the write, so that the watch's answer cannot come first.
// A fuse whose trip failed to write stays tripped in memory: nothing more
// is done until it is written.
func (a *Actor) do(ctx context.Context, kind, node string, held *ledger.Entry, write func() error, why string) {
	a.mu.Lock()
	if kind == "quarantine" || kind == "release" {
		a.overlay[node] = held
	}
	a.mu.Unlock()
	verb := kind
	if a.opts.Mode == quarantine.DryRun {
		verb = "would " + kind
	} else if err := write(); err != nil {
		a.mu.Lock()
		delete(a.overlay, node)
		a.mu.Unlock()
		if errors.Is(err, errChanged) || ctx.Err() != nil {
			a.logf("quarantine: %s %s: not done, %s", kind, node, words.ErrorLine(err))
		} else {
			a.logf("quarantine: %s %s: %s; retrying", kind, node, words.ErrorLine(err))
		}
		return
	}
	a.mu.Lock()
	a.counts[kind]++
	a.mu.Unlock()
	a.logf("quarantine: %s %s (%s)", verb, node, why)
}

func (a *Actor) fuseTripped() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fuse.Tripped
}

// input is the decision's input now, the overlay applied. Under a.mu.
func (a *Actor) input(now time.Time) quarantine.Input {
	in := quarantine.Input{Now: now, Settings: a.opts.Settings, Fuse: a.fuse,
		Certain: quarantine.Certainty{LastFailure: a.failed, Forbidden: a.skipped}}
	for r, ok := range a.opts.Synced() {
		if !ok {
			in.Certain.Unsynced = append(in.Certain.Unsynced, string(r))
		}
	}
	slices.Sort(in.Certain.Unsynced)
	in.Nodes, in.GPUNodes = a.inputs[:0], a.gpuNodes
	for name, n := range a.nodes {
		if o, ok := a.overlay[name]; ok {
			n.Held, n.Recorded = o, o != nil
		}
		in.Nodes = append(in.Nodes, n)
	}
	a.inputs = in.Nodes
	return in
}

func (a *Actor) logf(format string, args ...any) {
	if a.opts.Log != nil {
		fmt.Fprintf(a.opts.Log, format+"\n", args...)
	}
}
