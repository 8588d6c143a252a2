// Package live keeps every node's verdict current, as the one-shot commands
// judge it (audit, order check, matrix row and, as asked, the reasons, the
// deploy labels' broken rules, health and the driver upgrade), for the
// commands that watch (watch, serve) and the exporters they feed
// (pkg/metrics, pkg/reportsync, pkg/nodeevents). A Tracker runs informers on
// the nodes, the namespace's pods and DaemonSets, for upgrades its
// ControllerRevisions and the upgrade controller's node Events, and for
// health the DRA driver's ResourceSlices, the namespace's ConfigMaps
// (offers.go) and its Warning Events on pods (kubelet.go), each object trimmed to the judges' fields as it arrives
// (informers.go, store.go). After
// the first full sync, every event queues the nodes it touches (handlers.go,
// loop.go), and only those are judged again, by the one pipeline the
// one-shot commands use (pkg/pipeline), on a snapshot of those nodes
// (batch.go). The roster and rules are the pipeline's too, decided from the
// DaemonSets and the ClusterPolicy, and decided again when a DaemonSet or a
// config the policy names changes.
package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// Options say what to judge: the pipeline's options, as the one-shot
// commands' flags set them (Node and GroupBy are not used).
type Options struct {
	pipeline.Options
	// SyncTimeout, when set, bounds the wait for the first full sync, and a
	// failed list or watch before it ends Run at once: a command a person
	// runs. Zero waits for ever and retries, as a server does.
	SyncTimeout time.Duration
	// Logs, when set, reads the failing containers' logs (serve --logs):
	// each batch is judged with the lines already read that excuse a wait,
	// its health verdicts get the host faults read, and a node is judged
	// again once a log it lacked is read.
	Logs *pipeline.LogReader
}

// Hooks are told what the tracker does. Judged is called from Run's own
// goroutine, batch after batch; WatchFailed from the informers' goroutines.
type Hooks struct {
	Judged      func(verdict.Batch)
	WatchFailed func(resource Resource, err error) // the informer retries on its own
	// Skipped: a resource the tracker can go without is not watched, since
	// the user may not list it or the server does not serve it (err says
	// which); without says, in words, what goes without it.
	Skipped func(resource Resource, without string, err error)
	// Workloads, with Options.Workloads, is told the workload side each
	// time it is judged (workloads.go), from a goroutine of its own.
	Workloads func(Workloads)
}

// Tracker keeps the verdicts of one cluster's nodes current.
type Tracker struct {
	opts   Options
	client kubernetes.Interface
	// resources change only in Run's goroutine (a forbidden one left, the
	// node informer started or replaced), under mu for Synced.
	mu        sync.Mutex
	resources []resource
	hooks     []Hooks
	// queue holds the nodes to judge again and the changes that decide the
	// scope again: a node queued twice before it is judged is judged once,
	// and a pause is queued again for the moment it becomes stuck
	// (AddAfter).
	queue  workqueue.TypedDelayingInterface[item]
	ready  atomic.Bool
	failed chan error // the first watch error, for SyncTimeout
	work   *workloads // serve --workloads' (workloads.go); nil without

	// Owned by the goroutine of Run.
	ctx      context.Context // Run's once it judges, for the reads a judgement makes (kubelet.go)
	wg       sync.WaitGroup  // the informers' goroutines
	labels   pipeline.Labels // the node labels the node informer keeps
	verdicts map[string]*verdict.Verdict
	operator snapshot.Snapshot // the ClusterPolicy and NVIDIADrivers, with the reader's notes
	scope    pipeline.Scope
	// The last rollout and what it read (batch.go's rollout).
	rolled     *upgrade.Rollout
	rolledAt   time.Time
	rolloutIns map[string]rolloutIn
}

// New sets up the informers; nothing is read before Run. Each object is
// trimmed to what the judges read as it arrives. The informers list with a
// streaming watch (WatchList) where the server offers it. The node informer
// is set up in Run, once the DaemonSets are known (watchNodes).
func New(client kubernetes.Interface, opts Options) (*Tracker, error) {
	t := &Tracker{ctx: context.Background(), opts: opts, client: client, queue: workqueue.NewTypedDelayingQueue[item](), failed: make(chan error, 1), verdicts: map[string]*verdict.Verdict{}}
	pods := coreinformers.NewFilteredPodInformer(client, opts.Namespace, 0, cache.Indexers{nodeIndex: podNode}, nil)
	// The DaemonSets are few; the roster and the reasons read them.
	dss := appsinformers.NewFilteredDaemonSetInformer(client, opts.Namespace, 0, cache.Indexers{}, nil)
	if err := t.add(Pods, pods, trimPod, podEvents(t.mark), nil); err != nil {
		return nil, err
	}
	if err := t.add(DaemonSets, dss, trimDaemonSet, daemonSetEvents(t.mark), nil); err != nil {
		return nil, err
	}
	if opts.Upgrades { // what the one-shot read's Upgrades lists, watched
		revs := appsinformers.NewFilteredControllerRevisionInformer(client, opts.Namespace, 0, cache.Indexers{}, nil)
		err := t.add(ControllerRevisions, revs, trimRevision, revisionEvents(t.mark), &optional{mayWatch(client.AppsV1().ControllerRevisions(opts.Namespace), nil), withoutUpgrades})
		if err != nil {
			return nil, err
		}
		selectEvents := func(o *metav1.ListOptions) { o.FieldSelector = read.UpgradeEvents }
		events := coreinformers.NewFilteredEventInformer(client, metav1.NamespaceDefault, 0, cache.Indexers{nodeIndex: eventNode}, selectEvents)
		err = t.add(UpgradeEvents, events, trimEvent, upgradeEvents(t.mark), &optional{mayWatch(client.CoreV1().Events(metav1.NamespaceDefault), selectEvents), withoutUpgrades})
		if err != nil {
			return nil, err
		}
	}
	if err := t.watchOffers(); err != nil {
		return nil, err
	}
	if opts.ReadOptions().Kubelet {
		if err := t.watchWarnings(pods.GetIndexer()); err != nil {
			return nil, err
		}
	}
	if opts.Workloads {
		if err := t.watchWorkloads(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

const withoutUpgrades = "the driver upgrade verdict goes without them"

// NewFor sets up the tracker on the clients of a connection. When a
// person waits (watch), a cluster that does not answer within the
// connection's --request-timeout is an error, as for audit; an exporter
// (serve) waits on. The watches run without that timeout, which would cut
// every long watch short.
func NewFor(cl *kube.Clients, opts Options, personWaits bool) (*Tracker, error) {
	if personWaits {
		opts.SyncTimeout = cl.Config.Timeout
	}
	client, err := cl.ForWatching()
	if err != nil {
		return nil, err
	}
	return New(client, opts)
}

// Observe adds hooks; call it before Run.
func (t *Tracker) Observe(h Hooks) { t.hooks = append(t.hooks, h) }

// Ready reports whether every node has been judged a first time.
func (t *Tracker) Ready() bool { return t.ready.Load() }
