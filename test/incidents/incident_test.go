package incidents_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
)

// incident is one public thread's node, as testdata/<repo>-<number>.yaml
// describes it: what the thread pasted (kubectl get pods, describe, events,
// labels, logs) and the verdict its diagnosis gives.
type incident struct {
	// Thread is owner/repo#number; DiagnosedBy who reached the diagnosis
	// (a maintainer, or the reporter on their own), as the thread shows.
	Thread      string `json:"thread"`
	Title       string `json:"title"`
	DiagnosedBy string `json:"diagnosedBy"`
	Summary     string `json:"summary"`
	// Operator is the GPU Operator release the thread names; "" when it
	// names none.
	Operator string `json:"operator,omitempty"`
	Node     node   `json:"node"`
	// Pods are the operands' pods on the node, by operand name
	// (pkg/operand). An operand the node asks for (Node.Stack) and not
	// listed here runs a Ready pod.
	Pods map[string]pod `json:"pods,omitempty"`
	// Others are pods on the node that are not the operands': workloads
	// holding GPUs, the validator's workload pods.
	Others []other `json:"others,omitempty"`
	// NotShown is what the thread does not show and the description fills
	// in (with the operator's defaults, or a healthy state).
	NotShown []string `json:"notShown,omitempty"`
	// StuckAfter, when set, is the --stuck-after gpuops judges with: the
	// thread's state had lasted longer than the default allows, and the
	// labels this test writes are seconds old.
	StuckAfter *metav1.Duration `json:"stuckAfter,omitempty"`
	Expect     expect           `json:"expect"`
}

type node struct {
	// Stack are the operands the node asks for: their deploy labels are
	// "true", as the operator writes them on a GPU node.
	Stack []string `json:"stack"`
	// Labels are further labels, or other values of deploy labels ("" is
	// an empty value, as some releases leave).
	Labels map[string]string `json:"labels,omitempty"`
	// GPUs are the node's capacity and allocatable nvidia.com/gpu; none
	// when the thread shows none advertised.
	GPUs *gpus `json:"gpus,omitempty"`
}

type gpus struct {
	Capacity    int64 `json:"capacity"`
	Allocatable int64 `json:"allocatable"`
}

// pod is an operand's pod. Held in an init container (Init), those before
// it have completed and those after it, and the main container, wait in
// PodInitializing; State is that init container's. Otherwise every init
// container has completed and State is the main container's.
type pod struct {
	// DaemonSet names the operand's DaemonSet where the operator renders
	// another than the usual (precompiled drivers: one per kernel).
	DaemonSet string  `json:"daemonSet,omitempty"`
	Init      string  `json:"init,omitempty"`
	Container string  `json:"container,omitempty"` // the main container; default "main"
	State     state   `json:"state"`
	Reason    string  `json:"reason,omitempty"` // the pod's own status reason and message
	Message   string  `json:"message,omitempty"`
	Events    []event `json:"events,omitempty"`
	// Log is the tail of the failing container's log as the thread pasted
	// it (of the previous instance for a crash loop).
	Log string `json:"log,omitempty"`
}

// state is a container's: running and ready, or waiting or terminated for
// a reason; how often it restarted and how its last instance ended.
type state struct {
	Waiting    string `json:"waiting,omitempty"`
	Terminated string `json:"terminated,omitempty"`
	ExitCode   int32  `json:"exitCode,omitempty"`
	Message    string `json:"message,omitempty"` // the waiting message, or the termination message
	Restarts   int32  `json:"restarts,omitempty"`
	// Last is the reason the previous instance terminated with (Error,
	// OOMKilled, ...).
	Last         string `json:"last,omitempty"`
	LastExitCode int32  `json:"lastExitCode,omitempty"`
}

func (s state) running() bool { return s.Waiting == "" && s.Terminated == "" }

// event is a Warning the kubelet recorded on the pod.
type event struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int32  `json:"count,omitempty"`
}

// other is a pod that no operand's DaemonSet controls, bound to the node:
// a workload requesting GPUs GPUs, or a workload pod of the validator
// (nvidia-cuda-validator, nvidia-device-plugin-validator) with its init
// containers Inits, in the state its pod fields describe (Running and
// Ready when they are empty). Rejected: the kubelet refused it at
// admission (Failed, with Reason and Message, no container status).
type other struct {
	Name     string   `json:"name"`
	GPUs     int64    `json:"gpus,omitempty"`
	Inits    []string `json:"inits,omitempty"`
	Rejected bool     `json:"rejected,omitempty"`
	pod
}

// expect is the verdict the thread's diagnosis gives, in gpuops's terms.
type expect struct {
	Usable bool `json:"usable"`
	// Cause is the root cause a tool can name from what the API shows;
	// nil when the node is usable.
	Cause *cause `json:"cause,omitempty"`
	// Notes are what gpuops says of a usable node beside READY: a check's
	// artefact, not the node's fault.
	Notes []cause `json:"notes,omitempty"`
	// Blocked are the operands waiting behind the cause, in chain order.
	Blocked []string `json:"blocked,omitempty"`
	// Missing are the operands gpuops audit finds not Running, Stuck those
	// it finds paused by a helper for too long.
	Missing []string `json:"missing,omitempty"`
	Stuck   []string `json:"stuck,omitempty"`
	// Host is the host-side cause the thread found, which no API object
	// shows: said for the record (docs/incidents.md).
	Host string `json:"host,omitempty"`
	// Hint is the code of the catalog entry (pkg/signature) that the log
	// tail the thread pasted matches: what health --logs names; none when
	// the thread pasted no such line.
	Hint string `json:"hint,omitempty"`
	// WithoutLogs is the root cause health names without --logs where only
	// the log shows that what waits is not the node's fault (the driver
	// manager's word that the host has a driver): the verdict above is
	// then health --logs's.
	WithoutLogs *cause `json:"withoutLogs,omitempty"`
}

// plain is the verdict health gives without --logs.
func (e expect) plain() expect {
	if e.WithoutLogs == nil {
		return e
	}
	p := e
	p.Usable, p.Cause, p.Notes = false, e.WithoutLogs, nil
	return p
}

type cause struct {
	Code    string `json:"code"`
	Operand string `json:"operand"`
}

// The folders of the incidents: judged by the test, and pending (a cause
// code they expect may be one gpuops does not have yet).
const (
	judgedDir  = "testdata"
	pendingDir = "testdata/pending"
)

// load reads every incident of dir, in file name order, and checks each
// is whole: the thread names the file, every operand is one gpuops knows,
// and so is every cause code of an incident judged.
func load(t *testing.T, dir string) []incident {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []incident
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in incident
		if err := yaml.UnmarshalStrict(raw, &in); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := in.check(strings.TrimSuffix(filepath.Base(f), ".yaml"), dir == judgedDir); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		out = append(out, in)
	}
	return out
}

// check says what is wrong with an incident's description, named name;
// judged: its cause code must be one gpuops has.
func (in incident) check(name string, judged bool) error {
	if in.Thread == "" || fileName(in.Thread) != name {
		return fmt.Errorf("thread %q does not name the file (want %s.yaml)", in.Thread, fileName(in.Thread))
	}
	if in.DiagnosedBy == "" || in.Summary == "" || in.Title == "" {
		return fmt.Errorf("title, diagnosedBy and summary are required")
	}
	known := func(name string) bool {
		_, err := operand.Lookup(operand.Real, name)
		return err == nil
	}
	for _, o := range in.Node.Stack {
		if !known(o) {
			return fmt.Errorf("stack: unknown operand %q", o)
		}
		if _, ok := in.Node.Labels[operand.LabelPrefix+o]; ok {
			return fmt.Errorf("stack: %s has a label of its own too", o)
		}
	}
	for o, p := range in.Pods {
		if !known(o) {
			return fmt.Errorf("pods: unknown operand %q", o)
		}
		if p.Init != "" && !slices.ContainsFunc(in.release().InitsOf(o), func(i operand.Init) bool { return i.Container == p.Init }) {
			return fmt.Errorf("pods: %s has no init container %q", o, p.Init)
		}
	}
	for _, p := range in.Others {
		if p.Init != "" && !slices.Contains(p.Inits, p.Init) {
			return fmt.Errorf("others: %s has no init container %q", p.Name, p.Init)
		}
	}
	e := in.Expect
	switch {
	case e.Usable != (e.Cause == nil):
		return fmt.Errorf("expect: a usable node has no cause, an unusable one has one")
	case judged && e.Cause != nil && !slices.Contains(health.Codes, e.Cause.Code):
		return fmt.Errorf("expect: unknown cause code %q", e.Cause.Code)
	case e.Hint != "" && !slices.Contains(signature.Codes(), e.Hint):
		return fmt.Errorf("expect: unknown hint code %q", e.Hint)
	case e.Cause != nil && len(e.Notes) > 0:
		return fmt.Errorf("expect: notes are said of a usable node only")
	case e.WithoutLogs != nil && (e.Cause != nil || e.Hint == ""):
		return fmt.Errorf("expect: withoutLogs is said of a node that --logs finds usable by its hint")
	case judged && e.WithoutLogs != nil && !slices.Contains(health.Codes, e.WithoutLogs.Code):
		return fmt.Errorf("expect: unknown cause code %q", e.WithoutLogs.Code)
	}
	return nil
}

// release is the GPU Operator release the incident's operator is judged
// as (the newest when the thread names none): whose init containers its
// pods run.
func (in incident) release() operand.Release {
	r, _ := operand.ReleaseOf(in.Operator)
	return r
}

// fileName is the file an incident of thread lives in: NVIDIA/gpu-operator#233
// is gpu-operator-233.
func fileName(thread string) string {
	repo, number, _ := strings.Cut(thread, "#")
	_, repo, _ = strings.Cut(repo, "/")
	return repo + "-" + number
}

// TestIncidentsWhole checks every description, those judged and those
// pending alike: whole, each thread once, and listed in docs/incidents.md
// with the verdict it expects, in the section it is in.
func TestIncidentsWhole(t *testing.T) {
	raw, err := os.ReadFile("../../docs/incidents.md")
	if err != nil {
		t.Fatal(err)
	}
	judged, pending, ok := strings.Cut(string(raw), "\n## Not yet judged right\n")
	if !ok {
		t.Fatal("docs/incidents.md has no section Not yet judged right")
	}
	seen := map[string]string{}
	for dir, docs := range map[string]string{judgedDir: judged, pendingDir: pending} {
		for _, in := range load(t, dir) {
			if d, ok := seen[in.Thread]; ok {
				t.Errorf("%s is in %s and in %s", in.Thread, d, dir)
			}
			seen[in.Thread] = dir
			line := docsLine(docs, in.Thread)
			for _, says := range []string{in.Expect.says(), in.Expect.plain().says()} {
				if !strings.Contains(line, "`"+says+"`") {
					t.Errorf("docs/incidents.md: no line of %s saying `%s` in the section of %s:\n%s", in.Thread, says, dir, line)
				}
			}
			if h := in.Expect.Hint; h != "" && !strings.Contains(line, "hint `"+h+"`") {
				t.Errorf("docs/incidents.md: the line of %s names no hint `%s`:\n%s", in.Thread, h, line)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no incident")
	}
}

// says is the verdict as gpuops health words it after the node's name.
func (e expect) says() string {
	if e.Cause != nil {
		return "UNUSABLE " + e.Cause.Code + " " + e.Cause.Operand
	}
	s := "READY"
	for _, n := range e.Notes {
		s += " note " + n.Code + " " + n.Operand
	}
	return s
}

// docsLine is the line of docs that links thread, "" if none.
func docsLine(docs, thread string) string {
	for _, l := range strings.Split(docs, "\n") {
		if strings.HasPrefix(l, "| ["+thread+"]") {
			return l
		}
	}
	return ""
}
