package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/verdict"
)

func healthVerdicts() []verdict.Verdict {
	return []verdict.Verdict{
		{Node: "cpu-1", Health: &health.Node{Node: "cpu-1", Usable: true}},
		{Node: "gpu-1", Health: &health.Node{Node: "gpu-1", Judged: true, Usable: true}},
		{Node: "gpu-2", Health: &health.Node{Node: "gpu-2", Judged: true,
			Cause:    &health.Cause{Code: health.CrashLoop, Operand: "driver", Message: "driver crash-loops"},
			Blocked:  []string{"container-toolkit", "device-plugin"},
			Also:     []health.Cause{{Code: health.Missing, Operand: "dcgm-exporter", Message: "no pod"}},
			Evidence: []string{"driver: pod d-1 Running, 5 restarts"}}},
		{Node: "gpu-3", Health: &health.Node{Node: "gpu-3", Judged: true, Cause: &health.Cause{Code: health.NodeNotReady, Message: "node is NotReady"},
			OutOfService: &ledger.Entry{Actor: ledger.Person, By: "kubectl-cordon", Cordoned: true, Since: &cordonedAt}}},
	}
}

var cordonedAt = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// Text: one line per GPU node, its root cause and what it blocks; a second
// root cause is no second verdict line: --explain adds the messages, the
// other causes ("also") and the evidence; a CPU node is no GPU node.
func TestHealthText(t *testing.T) {
	for _, tc := range []struct {
		why  bool
		want string
	}{
		{false, "gpu-1 READY\n" +
			"gpu-2 UNUSABLE crash-loop driver blocks container-toolkit,device-plugin\n" +
			"gpu-3 UNUSABLE node-not-ready\n"},
		{true, "gpu-1 READY\n" +
			"gpu-2 UNUSABLE crash-loop driver blocks container-toolkit,device-plugin\n  driver crash-loops\n" +
			"  also missing dcgm-exporter: no pod\n  driver: pod d-1 Running, 5 restarts\n" +
			"gpu-3 UNUSABLE node-not-ready\n  node is NotReady\n  out of service: cordoned by person (kubectl-cordon) since 2026-12-04T10:00:00Z\n"},
	} {
		var b bytes.Buffer
		if err := (report.Printer{Format: report.Text}).Result(&b, io.Discard, &outcome.Result{Nodes: healthVerdicts(), Explain: tc.why}, report.HealthView); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("explain=%v:\n%s\nwant:\n%s", tc.why, b.String(), tc.want)
		}
	}
}

// Table: a row per GPU node; a column OUT-OF-SERVICE, the ledger's actor,
// only when some GPU node is out of service.
func TestHealthTable(t *testing.T) {
	in := healthVerdicts()
	out := "NODE    STATUS     CAUSE            OPERAND   BLOCKS                            OUT-OF-SERVICE\n" +
		"gpu-1   READY\n" +
		"gpu-2   UNUSABLE   crash-loop       driver    container-toolkit,device-plugin\n" +
		"gpu-3   UNUSABLE   node-not-ready                                               person\n"
	inService := "NODE    STATUS     CAUSE            OPERAND   BLOCKS\n" +
		"gpu-1   READY\n" +
		"gpu-2   UNUSABLE   crash-loop       driver    container-toolkit,device-plugin\n" +
		"gpu-3   UNUSABLE   node-not-ready\n"
	for _, tc := range []struct {
		name  string
		nodes []verdict.Verdict
		want  string
	}{
		{"one out of service", in, out},
		{"all in service", []verdict.Verdict{in[0], in[1], in[2], {Node: "gpu-3", Health: &health.Node{Node: "gpu-3", Judged: true, Cause: in[3].Health.Cause}}}, inService},
	} {
		var b bytes.Buffer
		if err := (report.Printer{Format: report.Table}).Result(&b, io.Discard, &outcome.Result{Nodes: tc.nodes}, report.HealthView); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// JSON: every node, GPU or not, with "blocked" a list even when empty.
func TestHealthJSON(t *testing.T) {
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JSON}).Result(&b, io.Discard, &outcome.Result{Nodes: healthVerdicts(), Explain: false}, report.HealthView); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Nodes []struct {
			Node         string
			Judged       bool
			Usable       bool
			Cause        *struct{ Code, Operand, Message string }
			Blocked      []string
			OutOfService *struct{ Actor, By string }
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 4 || got.Nodes[0].Judged || !got.Nodes[1].Usable || got.Nodes[1].Blocked == nil ||
		got.Nodes[2].Cause.Code != "crash-loop" || got.Nodes[2].Cause.Operand != "driver" || len(got.Nodes[2].Blocked) != 2 ||
		got.Nodes[2].OutOfService != nil || got.Nodes[3].OutOfService == nil || got.Nodes[3].OutOfService.Actor != ledger.Person {
		t.Errorf("health -o json: %s", b.String())
	}
}

// JUnit: a case per GPU node, a failure per unusable one, its type the code.
func TestHealthJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JUnit}).Result(&b, io.Discard, &outcome.Result{Nodes: healthVerdicts(), Explain: true}, report.HealthView); err != nil {
		t.Fatal(err)
	}
	s := parseJUnit(t, b.Bytes())
	cases := s.Suites[0].Cases
	if s.Tests != 3 || s.Failures != 2 || cases[1].Failure == nil || cases[1].Failure.Type != "crash-loop" ||
		cases[1].Failure.Message != "UNUSABLE crash-loop driver blocks container-toolkit,device-plugin" {
		t.Errorf("health -o junit:\n%s", b.String())
	}
	if err := validateJUnit(t, b.Bytes()); err != nil {
		t.Error(err)
	}
}
