package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// hinted is an unusable node whose driver pod's log named nouveau (health
// --logs), and a note of a log that could not be read.
func hinted() *outcome.Result {
	s, _ := signature.Of(signature.NouveauLoaded)
	found := signature.Found{Signature: s, Line: "Failed to unload nouveau driver"}
	return &outcome.Result{LogNotes: []string{"--logs: the log of container c of pod p could not be read: gone"},
		Nodes: []verdict.Verdict{{Node: "gpu-1", Health: &health.Node{Node: "gpu-1", Judged: true,
			Cause:   &health.Cause{Code: health.CrashLoop, Operand: "driver", Message: "driver crash-loops"},
			Blocked: []string{"container-toolkit"},
			Hints:   []signature.Hint{found.Hint(signature.FromLog, "nvidia-driver-daemonset-x", "k8s-driver-manager", true)}}}}}
}

// The verdict's line ends with the hint's code; --explain adds whose log
// said what, the cause and the remedy; the note is said however the
// verdict is printed.
func TestHealthTextHint(t *testing.T) {
	s, _ := signature.Of(signature.NouveauLoaded)
	for _, tc := range []struct {
		why  bool
		want string
	}{
		{false, "gpu-1 UNUSABLE crash-loop driver blocks container-toolkit hint nouveau-loaded\n"},
		{true, "gpu-1 UNUSABLE crash-loop driver blocks container-toolkit hint nouveau-loaded\n  driver crash-loops\n" +
			`  hint nouveau-loaded: container k8s-driver-manager of pod nvidia-driver-daemonset-x (its previous instance) logged "Failed to unload nouveau driver"` + "\n" +
			"    cause: " + s.Cause + "\n    remedy: " + s.Remedy + "\n"},
	} {
		r := hinted()
		r.Explain = tc.why
		var out, notes bytes.Buffer
		if err := (report.Printer{Format: report.Text}).Result(&out, &notes, r, report.HealthView); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("explain=%v:\n%s\nwant:\n%s", tc.why, out.String(), tc.want)
		}
		if want := "note: " + r.LogNotes[0] + "\n"; notes.String() != want {
			t.Errorf("explain=%v: notes %q, want %q", tc.why, notes.String(), want)
		}
	}
}

func TestHealthJSONHint(t *testing.T) {
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JSON}).Result(&b, &bytes.Buffer{}, hinted(), report.HealthView); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Nodes []struct {
			Hints []struct {
				Code, Component, Pod, Container, Line, Cause, Remedy string
				Previous                                             bool
			}
		}
		LogNotes []string
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 1 || len(got.Nodes[0].Hints) != 1 || len(got.LogNotes) != 1 {
		t.Fatalf("health -o json: %s", b.String())
	}
	h := got.Nodes[0].Hints[0]
	if h.Code != signature.NouveauLoaded || h.Pod != "nvidia-driver-daemonset-x" || h.Container != "k8s-driver-manager" || !h.Previous ||
		h.Line != "Failed to unload nouveau driver" || h.Cause == "" || h.Remedy == "" || h.Component == "" {
		t.Errorf("hint: %+v", h)
	}
}

func TestHTMLHint(t *testing.T) {
	r := hinted()
	f := summary.Fleet{GroupBy: "pool", Operands: operand.Lab[:1],
		Groups: []summary.Group{{Name: "a100", Nodes: 1, Operands: []summary.OperandCounts{{Operand: "driver"}}}},
		Nodes:  []summary.Node{{Name: "gpu-1", Group: "a100", Cells: make([]summary.Cell, 1), Findings: []summary.Finding{}, Health: r.Nodes[0].Health}}}
	var b bytes.Buffer
	if err := report.HTML(&b, f, nil, source); err != nil {
		t.Fatal(err)
	}
	s, _ := signature.Of(signature.NouveauLoaded)
	if want := `hint <code>nouveau-loaded</code>: Failed to unload nouveau driver`; !strings.Contains(b.String(), want) {
		t.Errorf("page lacks %q", want)
	}
	if !strings.Contains(b.String(), s.Remedy) {
		t.Errorf("page lacks the remedy %q", s.Remedy)
	}
}

func TestOpenReportsHint(t *testing.T) {
	var b bytes.Buffer
	if err := (report.Printer{Format: report.OpenReports}).Result(&b, &bytes.Buffer{}, hinted(), report.HealthView); err != nil {
		t.Fatal(err)
	}
	var l struct{ Items []v1alpha1.ClusterReport }
	if err := yaml.Unmarshal(b.Bytes(), &l); err != nil || len(l.Items) != 1 {
		t.Fatalf("-o openreports: %v\n%s", err, b.String())
	}
	s, _ := signature.Of(signature.NouveauLoaded)
	for _, res := range l.Items[0].Results {
		if res.Result == "fail" {
			if want := "nouveau-loaded: " + s.Cause + "; remedy: " + s.Remedy; res.Properties["hint"] != want {
				t.Errorf("hint %q, want %q", res.Properties["hint"], want)
			}
			return
		}
	}
	t.Errorf("no failing result: %s", b.String())
}

// A hint the kubelet's reports gave says what showed it.
func TestHintSources(t *testing.T) {
	s, _ := signature.Of(signature.DriverLibraryMismatch)
	found := signature.Found{Signature: s, Line: "nvml error: driver/library version mismatch"}
	for _, tc := range []struct {
		hint signature.Hint
		want string
	}{
		{found.Hint(signature.FromMessage, "p", "c", false), `  hint driver-library-mismatch: container c of pod p terminated with message "nvml error: driver/library version mismatch"`},
		{found.Hint(signature.FromEvent, "p", "", false), `  hint driver-library-mismatch: a Warning Event on pod p said "nvml error: driver/library version mismatch"`},
		{found.Hint(signature.FromLog, "p", "c", false), `  hint driver-library-mismatch: container c of pod p logged "nvml error: driver/library version mismatch"`},
	} {
		r := hinted()
		r.Explain, r.Nodes[0].Health.Hints = true, []signature.Hint{tc.hint}
		var out bytes.Buffer
		if err := (report.Printer{Format: report.Text}).Result(&out, &bytes.Buffer{}, r, report.HealthView); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want+"\n") {
			t.Errorf("from %s:\n%s\nwant the line %q", tc.hint.From, out.String(), tc.want)
		}
	}
}
