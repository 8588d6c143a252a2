package pipeline_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuops/gpuops/internal/snapshottest"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// failingFleet: node a's driver crash-loops, node b's toolkit waits for its
// image (it never ran), node c is healthy with a pod that restarted once
// long ago; a validator workload pod (no DaemonSet) failed on a.
func failingFleet() *snapshot.Snapshot {
	ops := []operand.Operand{operand.Lab.Driver(), operand.Lab.ContainerToolkit()}
	b := snapshottest.New("gpu-operator").DaemonSets(ops...)
	for _, n := range []string{"a", "b", "c"} {
		b.Node(n, snapshottest.Asks(ops...), func(n *snapshot.Node) { n.Ready = true }).Running(n, ops...)
	}
	s := b.Snapshot()
	for i := range s.Pods {
		p := &s.Pods[i]
		switch {
		case p.Node == "a" && p.DaemonSet == operand.Lab.Driver().DaemonSet:
			p.Health = snapshot.PodHealth{Container: "nvidia-driver-ctr", State: "CrashLoopBackOff", Restarts: 7, LastState: "Error"}
		case p.Node == "b" && p.DaemonSet == operand.Lab.ContainerToolkit().DaemonSet:
			p.Health = snapshot.PodHealth{Container: "toolkit", State: "ImagePullBackOff"}
		case p.Node == "c":
			p.Health = snapshot.PodHealth{Ready: true, Restarts: 1}
		default:
			p.Health.Ready = true
		}
	}
	s.Pods = append(s.Pods, snapshot.Pod{Name: "nvidia-cuda-validator-x", Node: "a", Phase: "Failed",
		Health: snapshot.PodHealth{Container: "cuda-validation", State: "Error"}})
	return s
}

func TestFailingContainersAreTheUnusableNodesFailedOnes(t *testing.T) {
	s := failingFleet()
	r, err := pipeline.Decide(s, pipeline.Options{Namespace: "gpu-operator", Roster: pipeline.LabRoster, Health: true}).Judge(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range pipeline.FailingContainers(s, r) {
		got = append(got, f.Node+" "+f.Pod+" "+f.Container+" previous="+map[bool]string{true: "yes", false: "no"}[f.Previous])
	}
	driverPod := operand.Lab.Driver().DaemonSet + "-a"
	want := []string{"a " + driverPod + " nvidia-driver-ctr previous=yes", "a nvidia-cuda-validator-x cuda-validation previous=no"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("failing containers %q, want %q (b's toolkit never ran, c is usable)", got, want)
	}
	if v, _ := r.Verdict("c"); !v.Health.Usable {
		t.Errorf("node c is not usable: %+v", v.Health)
	}
}

// A log that shows a signature is its node's hint; a healthy log none; a
// log forbidden is one note for all, another error a note of its own.
func TestAddHints(t *testing.T) {
	s := failingFleet()
	r, err := pipeline.Decide(s, pipeline.Options{Namespace: "gpu-operator", Roster: pipeline.LabRoster, Health: true}).Judge(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fs := pipeline.FailingContainers(s, r)
	sig, _ := signature.Of(signature.DriverInUse)
	logs := []pipeline.Log{
		{LogTarget: fs[0].LogTarget, Text: "Unloading NVIDIA driver kernel modules...\n" + sig.Texts[0] + "\n"},
		{LogTarget: fs[1].LogTarget, Text: "Test PASSED\n"},
	}
	pipeline.AddHints(r, fs, logs)
	v, _ := r.Verdict("a")
	if h := v.Health.Hints; len(h) != 1 || h[0].Code != signature.DriverInUse || h[0].Pod != fs[0].Pod || !h[0].Previous || h[0].Line != sig.Texts[0] {
		t.Errorf("node a's hints: %+v", h)
	}
	if len(r.LogNotes) != 0 {
		t.Errorf("notes %q of logs all read", r.LogNotes)
	}
	pipeline.AddHints(r, fs[:1], logs[:1]) // the same fault of the same pod again (a termination message's, say)
	if h := v.Health.Hints; len(h) != 1 {
		t.Errorf("the same fault of the same pod twice: %+v", h)
	}

	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/log"}, fs[0].Pod, errors.New("no"))
	r.LogNotes = nil
	pipeline.AddHints(r, append(fs, fs[0]), []pipeline.Log{{LogTarget: fs[0].LogTarget, Err: forbidden}, {LogTarget: fs[1].LogTarget, Err: errors.New("container not found\n(gone)")}, {LogTarget: fs[0].LogTarget, Err: forbidden}})
	if len(r.LogNotes) != 2 || !strings.Contains(r.LogNotes[0], "get on pods/log") || r.LogNotes[1] != "--logs: the log of container cuda-validation of pod nvidia-cuda-validator-x could not be read: container not found (gone)" {
		t.Errorf("notes %q, want one of the right missing, one of the log not read", r.LogNotes)
	}
}

// logBook is a LogReader's read function that counts the reads of each
// container and answers with the text given for it; done is told each
// node judged again.
type logBook struct {
	mu    sync.Mutex
	reads map[string]int
	text  map[string]string
	again chan string
}

func newLogBook() *logBook {
	return &logBook{reads: map[string]int{}, text: map[string]string{}, again: make(chan string, 100)}
}

func (b *logBook) read(_ context.Context, cs []pipeline.LogTarget) []pipeline.Log {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]pipeline.Log, len(cs))
	for i, c := range cs {
		b.reads[c.Pod]++
		out[i] = pipeline.Log{LogTarget: c, Text: b.text[c.Pod]}
	}
	return out
}

// judge judges the snapshot and lets the reader add its hints; waits for
// n reads it starts to be done.
func (b *logBook) judge(t *testing.T, l *pipeline.LogReader, s *snapshot.Snapshot, n int) *outcome.Result {
	t.Helper()
	r, err := pipeline.Decide(s, pipeline.Options{Namespace: "gpu-operator", Roster: pipeline.LabRoster, Health: true}).Judge(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	l.Hints(s, r, func(node string) { b.again <- node })
	for range n {
		select {
		case <-b.again:
		case <-time.After(10 * time.Second):
			t.Fatal("a read started was never done")
		}
	}
	return r
}

// serve --logs: a failure is read once, in the background, its hint added
// from the next judgement on; a restart is a new failure, read again; no
// more reads start in a minute than allowed.
func TestLogReaderReadsEachFailureOnce(t *testing.T) {
	s := failingFleet()
	driverPod := operand.Lab.Driver().DaemonSet + "-a"
	b := newLogBook()
	sig, _ := signature.Of(signature.KernelHeadersMissing)
	b.text[driverPod] = sig.Texts[0]
	l := pipeline.NewLogReaderWith(b.read, 10, func(note string) { t.Errorf("note %q", note) })

	if r := b.judge(t, l, s, 2); hints(r, "a") != "" {
		t.Errorf("hints %q before any read was done", hints(r, "a"))
	}
	if r := b.judge(t, l, s, 0); hints(r, "a") != signature.KernelHeadersMissing {
		t.Errorf("hints %q once read, want %s", hints(r, "a"), signature.KernelHeadersMissing)
	}
	if b.reads[driverPod] != 1 || b.reads["nvidia-cuda-validator-x"] != 1 {
		t.Errorf("reads %v, want each failing container read once", b.reads)
	}
	s.Pods[0].Health.Restarts++ // node a's driver failed again
	b.judge(t, l, s, 1)
	if b.reads[driverPod] != 2 || b.reads["nvidia-cuda-validator-x"] != 1 {
		t.Errorf("reads %v, want the driver read again after its restart, the rest not", b.reads)
	}

	b = newLogBook()
	l = pipeline.NewLogReaderWith(b.read, 1, func(string) {})
	b.judge(t, l, s, 1)
	b.judge(t, l, s, 0)
	if n := b.reads[driverPod] + b.reads["nvidia-cuda-validator-x"]; n != 1 {
		t.Errorf("%d reads in a minute, want at most 1: %v", n, b.reads)
	}
}

// hints are the codes of a node's hints.
func hints(r *outcome.Result, node string) string {
	v, _ := r.Verdict(node)
	var codes []string
	for _, h := range v.Health.Hints {
		codes = append(codes, h.Code)
	}
	return strings.Join(codes, ",")
}

// The init container the root cause's pod is held in is read too (the
// driver manager says there why it waits); a pod held in init behind it
// is not.
func TestFailingContainersReadTheCausesInitContainer(t *testing.T) {
	ops := []operand.Operand{operand.Lab.Driver(), operand.Lab.ContainerToolkit()}
	s := snapshottest.New("gpu-operator").DaemonSets(ops...).
		Node("a", snapshottest.Asks(ops...), func(n *snapshot.Node) { n.Ready = true }).Running("a", ops...).Snapshot()
	for i := range s.Pods {
		s.Pods[i].Phase = "Pending"
		s.Pods[i].Health = snapshot.PodHealth{Init: "k8s-driver-manager", InitTotal: 1}
		if s.Pods[i].DaemonSet != operand.Lab.Driver().DaemonSet {
			s.Pods[i].Health = snapshot.PodHealth{Init: "driver-validation", InitTotal: 1}
		}
	}
	r, err := pipeline.Decide(s, pipeline.Options{Namespace: "gpu-operator", Roster: pipeline.LabRoster, Health: true}).Judge(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fs := pipeline.FailingContainers(s, r)
	if len(fs) != 1 || fs[0].Pod != operand.Lab.Driver().DaemonSet+"-a" || fs[0].Container != "k8s-driver-manager" || fs[0].Previous {
		t.Errorf("failing containers %+v, want the driver pod's k8s-driver-manager alone", fs)
	}
}

// A failure over the minute's budget has its node judged again once the
// next minute's budget is there.
func TestLogReaderDefersOverBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a minute")
	}
	s := failingFleet()
	b := newLogBook()
	l := pipeline.NewLogReaderWith(b.read, 1, func(string) {})
	b.judge(t, l, s, 1)
	select {
	case <-b.again:
	case <-time.After(70 * time.Second):
		t.Fatal("the failure over budget: its node was never judged again")
	}
}
