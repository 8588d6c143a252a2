package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/words"
)

// MaxLogs is how many failing containers' logs one run reads at most: on a
// fleet where a fault took down hundreds of nodes alike, the first few
// name it, and the rest would only load the kubelets.
const MaxLogs = 64

// Failing is a failing container on an unusable node: whose log may name
// the host's fault.
type Failing struct {
	Node string
	LogTarget
	// Restarts is how many times the container has restarted: a container
	// that fails again is a new failure, whose log may say something new.
	Restarts int32
}

// FailingContainers are the containers whose logs --logs reads: on each
// unusable GPU node of the result, every pod of the namespace (the
// operands' and the validator's workload pods alike) whose worst container
// failed after it ran (health.LogOf), and the init container the root
// cause's pod is held in (it says why it waits: k8s-driver-manager, that
// the host has a driver), in node order.
func FailingContainers(s *snapshot.Snapshot, r *outcome.Result) []Failing {
	unusable := map[string]*operand.Operand{} // by node: the operand of its cause, nil for none
	for _, v := range r.Nodes {
		if h := v.Health; h != nil && h.Judged && !h.Usable {
			unusable[v.Node] = nil
			if i := slices.IndexFunc(r.Roster, func(o operand.Operand) bool { return h.Cause != nil && o.Name == h.Cause.Operand }); i >= 0 {
				unusable[v.Node] = &r.Roster[i]
			}
		}
	}
	if len(unusable) == 0 {
		return nil
	}
	byNode := map[string][]Failing{}
	for _, p := range s.Pods {
		node := p.Placement()
		cause, ok := unusable[node]
		if !ok {
			continue
		}
		container := p.Health.Container
		previous, failed := health.LogOf(p.Health)
		if !failed && p.Health.Init != "" && p.Health.Container == "" && cause != nil && cause.RunBy(p.DaemonSet) {
			container, failed = p.Health.Init, true
		}
		if failed {
			byNode[node] = append(byNode[node], Failing{Node: node, Restarts: p.Health.Restarts,
				LogTarget: LogTarget{Namespace: s.Namespace, Pod: p.Name, Container: container, Previous: previous}})
		}
	}
	var out []Failing
	for _, v := range r.Nodes { // natural node order
		out = append(out, byNode[v.Node]...)
	}
	return out
}

// AddHints matches the logs read against the catalog and adds what they
// show to their nodes' health as hints; what could not be read is a note
// of the result (a missing right once, not once a container). It returns
// the hints by pod, and whether one of them excuses a wait
// (signature.Signature.Excuses): the nodes must then be judged again with
// them (snapshot.Snapshot.Logged).
func AddHints(r *outcome.Result, fs []Failing, logs []Log) (map[string][]signature.Hint, bool) {
	forbidden, excuses := false, false
	var byPod map[string][]signature.Hint
	for i, l := range logs {
		h, note := hintOf(l)
		switch {
		case l.Forbidden():
			if !forbidden {
				r.LogNotes = append(r.LogNotes, note)
			}
			forbidden = true
		case note != "":
			r.LogNotes = append(r.LogNotes, note)
		case h != nil:
			addHint(r, fs[i].Node, *h)
			if byPod == nil {
				byPod = map[string][]signature.Hint{}
			}
			byPod[h.Pod] = append(byPod[h.Pod], *h)
			excuses = excuses || excusing(*h)
		}
	}
	return byPod, excuses
}

// excusing reports whether the hint's signature excuses a wait.
func excusing(h signature.Hint) bool {
	f, ok := signature.Of(h.Code)
	return ok && f.Excuses
}

// addHint adds a hint to the node's health, unless the kubelet's reports
// of the same container already named the same fault (a termination
// message that is the log's tail, FallbackToLogsOnError).
func addHint(r *outcome.Result, node string, h signature.Hint) {
	v, err := r.Verdict(node)
	if err != nil || v.Health == nil {
		return
	}
	if !slices.ContainsFunc(v.Health.Hints, func(o signature.Hint) bool { return o.Code == h.Code && o.Pod == h.Pod }) {
		v.Health.Hints = append(v.Health.Hints, h)
	}
}

// hintOf is what one log read gives: the hint of the signature it shows
// (nil for none), or the note of why it could not be read.
func hintOf(l Log) (*signature.Hint, string) {
	switch {
	case l.Forbidden():
		return nil, fmt.Sprintf("--logs: no right to read the logs of pods in namespace %s (get on pods/log): no hint names the host's fault", l.Namespace)
	case l.Err != nil:
		return nil, fmt.Sprintf("--logs: the log of container %s of pod %s could not be read: %s", l.Container, l.Pod, words.ErrorLine(l.Err))
	}
	found, ok := signature.Match(l.Text)
	if !ok {
		return nil, ""
	}
	h := found.Hint(signature.FromLog, l.Pod, l.Container, l.Previous)
	return &h, ""
}

// readHints reads the logs of the result's failing containers, at most
// MaxLogs, and adds their hints. Where one excuses a wait, it judges the
// snapshot again with them, and returns that result.
func readHints(ctx context.Context, c kubernetes.Interface, s *snapshot.Snapshot, sc Scope, r *outcome.Result, now time.Time) (*outcome.Result, error) {
	fs := FailingContainers(s, r)
	var notes []string
	if len(fs) > MaxLogs {
		notes = append(notes, fmt.Sprintf("--logs: the logs of %d more failing containers were not read (at most %d a run)", len(fs)-MaxLogs, MaxLogs))
		fs = fs[:MaxLogs]
	}
	cs := make([]LogTarget, len(fs))
	for i, f := range fs {
		cs[i] = f.LogTarget
	}
	logs := readLogs(ctx, c, cs)
	r.LogNotes = append(r.LogNotes, notes...)
	logged, excuses := AddHints(r, fs, logs)
	if !excuses {
		return r, nil
	}
	s.Logged = logged
	again, err := sc.Judge(s, now)
	if err != nil {
		return nil, err
	}
	again.LogNotes = append(again.LogNotes, notes...)
	AddHints(again, fs, logs) // the hints of pods no link judges (a workload pod's), and the notes again
	return again, nil
}

// LogReader reads failing containers' logs for the live tracker (serve
// --logs), never in the judge's way: a judgement adds the hints already
// read and starts the reads it lacks in the background, and the node is
// judged again once one is done. Each failure is read once — a container
// is read again only when it has restarted since, a new failure — and at
// most PerMinute reads start in a minute: a fleet whose nodes fail together
// loads the kubelets no more than that; a failure left unread has its node
// judged again in the next minute, and is read then.
type LogReader struct {
	read      func(context.Context, []LogTarget) []Log
	perMinute int
	note      func(string)

	mu        sync.Mutex
	done      map[logKey]*signature.Hint // nil: read, and no signature in it
	reading   map[logKey]bool
	deferred  map[logKey]bool // over the minute's budget: its node judged again in the next
	window    time.Time       // the minute the reads below started in
	started   int
	forbidden bool // said once: every other read would be refused alike
}

// LogsPerMinute is how many logs serve --logs reads at most in a minute.
const LogsPerMinute = 10

// maxRemembered bounds what a LogReader remembers: past it, it forgets
// every failure read (pods come and go), and reads again what still fails.
const maxRemembered = 4096

// logKey is one failure of one container: a restart is a new one.
type logKey struct {
	pod, container string
	restarts       int32
}

// NewLogReader reads through c, at most perMinute logs a minute, and says
// what it could not read through note.
func NewLogReader(c kubernetes.Interface, perMinute int, note func(string)) *LogReader {
	return newLogReader(func(ctx context.Context, cs []LogTarget) []Log { return readLogs(ctx, c, cs) }, perMinute, note)
}

// newLogReader reads with read.
func newLogReader(read func(context.Context, []LogTarget) []Log, perMinute int, note func(string)) *LogReader {
	return &LogReader{read: read, perMinute: perMinute, note: note, done: map[logKey]*signature.Hint{}, reading: map[logKey]bool{},
		deferred: map[logKey]bool{}}
}

// Hints adds to the result the hints of its failing containers read so
// far, and starts reading the others, as the budget allows; again judges a
// node again (once its read is done).
func (l *LogReader) Hints(s *snapshot.Snapshot, r *outcome.Result, again func(node string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.window) >= time.Minute {
		l.window, l.started = now, 0
	}
	for _, f := range FailingContainers(s, r) {
		k := logKey{f.Pod, f.Container, f.Restarts}
		if h, done := l.done[k]; done {
			if h != nil {
				addHint(r, f.Node, *h)
			}
			continue
		}
		if l.reading[k] || l.forbidden || l.deferred[k] {
			continue
		}
		if l.started >= l.perMinute {
			// Nothing else may judge its node again: ask for it once the
			// next minute's budget is there.
			l.deferred[k] = true
			time.AfterFunc(l.window.Add(time.Minute).Sub(now), func() {
				l.mu.Lock()
				delete(l.deferred, k)
				l.mu.Unlock()
				again(f.Node)
			})
			continue
		}
		l.reading[k], l.started = true, l.started+1
		go l.readOne(k, f, again)
	}
}

// Logged gives the snapshot, before it is judged, the hints read so far
// that excuse a wait (signature.Signature.Excuses), of its pods: the others
// Hints adds after the verdict.
func (l *LogReader) Logged(s *snapshot.Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, h := range l.done {
		if h == nil || !excusing(*h) || !slices.ContainsFunc(s.Pods, func(p snapshot.Pod) bool { return p.Name == k.pod }) {
			continue
		}
		if s.Logged == nil {
			s.Logged = map[string][]signature.Hint{}
		}
		s.Logged[k.pod] = append(s.Logged[k.pod], *h)
	}
}

// readOne reads one failing container's log and judges its node again.
func (l *LogReader) readOne(k logKey, f Failing, again func(node string)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := l.read(ctx, []LogTarget{f.LogTarget})[0]
	h, note := hintOf(got)
	l.mu.Lock()
	delete(l.reading, k)
	if note != "" && !(got.Forbidden() && l.forbidden) {
		l.note(note)
	}
	l.forbidden = l.forbidden || got.Forbidden()
	if len(l.done) >= maxRemembered {
		clear(l.done)
	}
	l.done[k] = h // a log that could not be read is not read again for this failure either
	l.mu.Unlock()
	again(f.Node)
}
