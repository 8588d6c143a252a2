// Package incidents_test rebuilds incidents from public GitHub threads on a
// real control plane, one per file of testdata (the node, its operands'
// pods in the states the thread pasted, their events, the pods beside
// them), runs gpuops health, audit and summary on each as a user does, and
// checks what they say against the diagnosis the thread reached.
// testdata/pending holds the incidents gpuops does not judge right yet
// (docs/incidents.md says what each needs); they are checked for
// wholeness only.
package incidents_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/outcome"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// TestIncidents builds every incident first (each in its own namespace, on
// its own node), waits until each holds its state, then judges them one by
// one.
func TestIncidents(t *testing.T) {
	files := load(t, judgedDir)
	var all []built
	for _, in := range files {
		all = append(all, build(t, in))
	}
	for _, b := range all {
		b.env.WaitForPods(t, b.env.Namespace, b.settled(false))
		b.refuse(t)
		pods := b.env.WaitForPods(t, b.env.Namespace, b.settled(true))
		b.events(t, pods)
		b.logs(t, pods)
	}
	for _, b := range all {
		t.Run(fileName(b.in.Thread), func(t *testing.T) { b.judge(t) })
	}
}

// judge runs gpuops on the incident's namespace and node as a user would
// and checks each command's verdict against the thread's.
func (b built) judge(t *testing.T) {
	c := gpuopstest.On(b.env)
	sel := []string{"-l", testcluster.LabelTestID + "=" + b.env.ID}
	if d := b.in.StuckAfter; d != nil {
		sel = append(sel, "--stuck-after", d.Duration.String())
		time.Sleep(time.Until(b.created.Add(d.Duration + time.Second)))
	}
	// Without --logs health says plain's; with them, the thread's (they
	// differ where only a log shows the wait is not the node's fault).
	e, plain := b.in.Expect, b.in.Expect.plain()
	exit := func(e expect) int {
		if e.Usable {
			return 0
		}
		return 1
	}
	code := exit(plain)

	// health -o json: usable, the root cause and what waits behind it.
	r := c.Run(t, append([]string{"health", "-o", "json"}, sel...)...)
	var h struct {
		Operator *outcome.Operator
		Nodes    []health.Node
	}
	if err := json.Unmarshal([]byte(r.Stdout), &h); err != nil || r.Code != code || len(h.Nodes) != 1 {
		t.Fatalf("health -o json: exit %d (want %d), %v\n%s%s", r.Code, code, err, r.Stdout, r.Stderr)
	}
	// The operator's version the thread names, in the verdict.
	if v := h.Operator; (v == nil) != (b.in.Operator == "") || v != nil && (v.Version != b.in.Operator || v.JudgedAs == "") {
		t.Errorf("health: operator %+v, want version %q", v, b.in.Operator)
	}
	checkVerdict(t, "health", h.Nodes[0], plain)

	// health --logs: the host's fault the log the thread pasted names.
	r = c.Run(t, append([]string{"health", "--logs", "-o", "json"}, sel...)...)
	var hl struct{ Nodes []health.Node }
	if err := json.Unmarshal([]byte(r.Stdout), &hl); err != nil || r.Code != exit(e) || len(hl.Nodes) != 1 {
		t.Fatalf("health --logs -o json: exit %d (want %d), %v\n%s%s", r.Code, exit(e), err, r.Stdout, r.Stderr)
	}
	checkVerdict(t, "health --logs", hl.Nodes[0], e)
	var hints []string
	for _, h := range hl.Nodes[0].Hints {
		if !slices.Contains(hints, h.Code) {
			hints = append(hints, h.Code)
		}
	}
	if want := slices.DeleteFunc([]string{e.Hint}, func(s string) bool { return s == "" }); !slices.Equal(nonNil(hints), nonNil(want)) {
		t.Errorf("health --logs: hints %+v, want %q", hl.Nodes[0].Hints, want)
	}
	e = plain // audit and summary read no log

	// health: its one line.
	line := b.node + " " + e.says()
	if len(e.Blocked) > 0 {
		line += " blocks " + strings.Join(e.Blocked, ",")
	}
	if r := c.Run(t, append([]string{"health"}, sel...)...); r.Code != code || !strings.Contains(r.Stdout, line+"\n") {
		t.Errorf("health: exit %d (want %d), no line %q in\n%s%s", r.Code, code, line, r.Stdout, r.Stderr)
	}

	// audit -o json: the operands asked for and not Running.
	r = c.Run(t, append([]string{"audit", "-o", "json"}, sel...)...)
	var a struct {
		Nodes []struct {
			Node           string
			Missing, Stuck []string
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || len(a.Nodes) != 1 {
		t.Fatalf("audit -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if m, st := a.Nodes[0].Missing, a.Nodes[0].Stuck; !slices.Equal(nonNil(m), nonNil(e.Missing)) || !slices.Equal(nonNil(st), nonNil(e.Stuck)) ||
		(r.Code == 0) != (len(e.Missing)+len(e.Stuck) == 0) {
		t.Errorf("audit: exit %d, missing %q stuck %q, want %q and %q", r.Code, m, st, e.Missing, e.Stuck)
	}

	// summary -o json: the node counted ready or unusable, by its cause.
	r = c.Run(t, append([]string{"summary", "-o", "json"}, sel...)...)
	var s struct {
		Groups []struct {
			Health struct {
				Ready, Unusable int
				Causes          []struct {
					Code, Operand string
					Nodes         int
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil || len(s.Groups) != 1 {
		t.Fatalf("summary -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	sh := s.Groups[0].Health
	wantCauses := 0
	if e.Cause != nil {
		wantCauses = 1
	}
	if sh.Ready != code^1 || sh.Unusable != code || len(sh.Causes) != wantCauses ||
		e.Cause != nil && (sh.Causes[0].Code != e.Cause.Code || sh.Causes[0].Operand != e.Cause.Operand) {
		t.Errorf("summary: health %+v, want usable=%v cause %+v", sh, e.Usable, e.Cause)
	}
}

// checkVerdict checks a node's health, as cmd says it, against e.
func checkVerdict(t *testing.T, cmd string, got health.Node, e expect) {
	t.Helper()
	if !got.Judged || got.Usable != e.Usable || !sameCause(got.Cause, e.Cause) || !slices.Equal(got.Blocked, nonNil(e.Blocked)) ||
		!slices.EqualFunc(got.Notes, e.Notes, func(g health.Cause, w cause) bool { return sameCause(&g, &w) }) {
		t.Errorf("%s: usable=%v cause %+v blocked %q notes %+v, want usable=%v cause %+v blocked %q notes %+v\nevidence: %q",
			cmd, got.Usable, got.Cause, got.Blocked, got.Notes, e.Usable, e.Cause, e.Blocked, e.Notes, got.Evidence)
	}
}

func sameCause(got *health.Cause, want *cause) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return got.Code == want.Code && got.Operand == want.Operand
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
