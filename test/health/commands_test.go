package health_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/pipeline"
)

// checkCommands: what the pure judge says of each node (want) is what
// gpuops health -o json, summary, report --html and serve's metrics say,
// through the one pipeline; health's text and exit code with it.
func checkCommands(t *testing.T, env *testcluster.Env, want []health.Node) {
	c := gpuopstest.On(env)
	args := func(cmd ...string) []string {
		return append(cmd, "--discover", "-l", testcluster.LabelTestID+"="+env.ID)
	}
	byNode := map[string]health.Node{}
	ready, unusable := 0, 0
	for _, h := range want {
		byNode[h.Node] = h
		switch {
		case !h.Judged:
		case h.Usable:
			ready++
		default:
			unusable++
		}
	}

	r := c.Run(t, args("health", "-o", "json")...)
	var got struct{ Nodes []health.Node }
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || r.Code != 1 {
		t.Fatalf("health -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if len(got.Nodes) != len(want) {
		t.Fatalf("health -o json: %d nodes, want %d", len(got.Nodes), len(want))
	}
	for _, g := range got.Nodes {
		if w := byNode[g.Node]; !sameVerdict(g, w) {
			t.Errorf("health -o json %s: %+v cause %+v, want %+v cause %+v", g.Node, g, g.Cause, w, w.Cause)
		}
	}

	r = c.Run(t, args("health")...)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	if r.Code != 1 || len(lines) < ready+unusable {
		t.Errorf("health: exit %d, %d lines, want exit 1 and a line per GPU node and cause:\n%s%s", r.Code, len(lines), r.Stdout, r.Stderr)
	}
	for _, w := range want {
		line := w.Node + " " + "READY"
		for _, n := range w.Notes {
			line += " note " + n.Code + " " + n.Operand
		}
		if w.Cause != nil {
			line = strings.TrimSpace(w.Node + " UNUSABLE " + w.Cause.Code + " " + w.Cause.Operand)
			if len(w.Blocked) > 0 {
				line += " blocks " + strings.Join(w.Blocked, ",")
			}
		}
		if w.Judged && !strings.Contains(r.Stdout, line+"\n") {
			t.Errorf("health: no line %q in\n%s", line, r.Stdout)
		}
		if !w.Judged && strings.Contains(r.Stdout, w.Node) {
			t.Errorf("health: the node without a GPU %s is listed:\n%s", w.Node, r.Stdout)
		}
	}

	r = c.Run(t, args("summary", "-o", "json")...)
	var sum struct {
		Groups []struct {
			Name   string
			Health struct{ Ready, Unusable int }
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || len(sum.Groups) != 1 {
		t.Fatalf("summary -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if h := sum.Groups[0].Health; h.Ready != ready || h.Unusable != unusable {
		t.Errorf("summary: group %s health %+v, want %d ready and %d unusable", sum.Groups[0].Name, h, ready, unusable)
	}

	r = c.Run(t, args("report", "--html", "-")...)
	for _, w := range want {
		if w.Cause != nil && !strings.Contains(r.Stdout, "✗ "+w.Cause.Code+"</span> <code>"+w.Cause.Operand+"</code>") {
			t.Errorf("report --html: no health cell %s/%s for %s", w.Cause.Code, w.Cause.Operand, w.Node)
		}
	}

	checkServe(t, c, args("serve", "--stuck-after", pipeline.DefaultStuckAfter.String()), want)
}

// sameVerdict compares what does not change with time: usable, the
// cause's code and operand, what it blocks, the notes' codes.
func sameVerdict(a, b health.Node) bool {
	if a.Node != b.Node || a.Judged != b.Judged || a.Usable != b.Usable || strings.Join(a.Blocked, ",") != strings.Join(b.Blocked, ",") ||
		noteCodes(a) != noteCodes(b) {
		return false
	}
	if a.Cause == nil || b.Cause == nil {
		return a.Cause == nil && b.Cause == nil
	}
	return a.Cause.Code == b.Cause.Code && a.Cause.Operand == b.Cause.Operand
}

// checkServe: serve exports each GPU node's usability and root cause.
func checkServe(t *testing.T, c gpuopstest.Cluster, args []string, want []health.Node) {
	s := c.Serve(t, args...)
	s.WaitReady(t)
	m := s.Scrape(t)
	for _, w := range want {
		node := map[string]string{"node": w.Node}
		switch {
		case !w.Judged:
			if m.HasSeries("gpuops_node_usable", node) {
				t.Errorf("serve: a series for the node without a GPU %s", w.Node)
			}
		case w.Usable:
			if !m.IsOne("gpuops_node_usable", node) {
				t.Errorf("serve: %s not usable: %q", w.Node, m.Series("gpuops_node_usable"))
			}
		default:
			if v, ok := m.Value("gpuops_node_usable", node); !ok || v != 0 ||
				!m.IsOne("gpuops_node_unusable_cause", map[string]string{"code": w.Cause.Code, "node": w.Node, "operand": w.Cause.Operand}) {
				t.Errorf("serve: %s, want unusable by %s/%s: %q", w.Node, w.Cause.Code, w.Cause.Operand, m.Series("gpuops_node_unusable_cause"))
			}
		}
	}
}
