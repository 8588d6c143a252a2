package report_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// node makes a verdict over the first two operands of the lab (driver,
// container-toolkit) and the device plugin.
func node(name string, missing []string, findings []string, present ...string) *verdict.Verdict {
	v := &verdict.Verdict{
		Node:    name,
		Audit:   judge.NodeAudit{Node: name, Missing: missing, Asked: []string{"driver", "container-toolkit"}},
		Order:   judge.NodeOrder{Node: name, Findings: findings},
		Row:     judge.MatrixRow{Node: name, Present: judge.NewPresent([]string{"driver", "toolkit", "device-plugin"}, present...)},
		Explain: &explain.Report{Missing: []explain.Missing{}, Warnings: []explain.Warning{}, Unexpected: []explain.Unexpected{}},
	}
	for _, m := range missing {
		v.Explain.Missing = append(v.Explain.Missing, explain.Missing{Node: name, Operand: m,
			Reasons: []explain.Reason{{Code: explain.UntoleratedTaint, Message: "DaemonSet x does not tolerate the node's taint t:NoSchedule"}}})
	}
	return v
}

var (
	roster = operand.Lab[:3]
	at     = time.Date(2026, 5, 3, 22, 51, 7, 123e6, time.UTC)
	ok2    = node("n-2", []string{}, []string{}, "driver", "toolkit", "device-plugin")
	bad10  = node("n-10", []string{"container-toolkit"}, []string{"device-plugin-without-toolkit"}, "driver", "device-plugin")
	fixed  = node("n-10", []string{}, []string{}, "driver", "toolkit", "device-plugin")

	initial = verdict.Batch{Time: at, Initial: true, Roster: roster, Changes: []verdict.Change{{After: ok2}, {After: bad10}}}
	repair  = verdict.Batch{Time: at.Add(time.Second), Roster: roster, Changes: []verdict.Change{{Before: bad10, After: fixed}, {Before: ok2}}}
)

func watch(t *testing.T, p report.Printer, explained bool, batches ...verdict.Batch) string {
	t.Helper()
	var b bytes.Buffer
	w := p.Watch(&b, explained, false)
	for _, batch := range batches {
		if err := w.Batch(batch); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestWatchText(t *testing.T) {
	got := watch(t, report.Printer{Format: report.Text}, false, initial, verdict.Batch{Time: at, Roster: roster}, repair)
	want := "n-2 OK\nn-2 ok\nn-10 MISSING container-toolkit\nn-10 device-plugin-without-toolkit\n" +
		"n-10 OK\nn-10 ok\nn-2 DELETED\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWatchPrintsOnlyWhatChanged(t *testing.T) {
	// The toolkit comes back; the order finding stays.
	half := node("n-10", []string{}, []string{"device-plugin-without-toolkit"}, "driver", "device-plugin")
	got := watch(t, report.Printer{Format: report.Text}, false, verdict.Batch{Time: at, Roster: roster, Changes: []verdict.Change{{Before: bad10, After: half}}})
	if got != "n-10 OK\n" {
		t.Errorf("got %q, want only the audit line", got)
	}
	// Only the matrix changed: no audit or order line says so.
	moved := node("n-10", []string{"container-toolkit"}, []string{"device-plugin-without-toolkit"}, "device-plugin")
	got = watch(t, report.Printer{Format: report.Text}, false, verdict.Batch{Time: at, Roster: roster, Changes: []verdict.Change{{Before: bad10, After: moved}}})
	if got != "" {
		t.Errorf("got %q for a matrix-only change, want nothing", got)
	}
}

func TestWatchExplainAndWide(t *testing.T) {
	got := watch(t, report.Printer{Format: report.Wide}, true, initial)
	want := "2026-05-03T22:51:07.123Z n-2 OK\n2026-05-03T22:51:07.123Z n-2 ok\n" +
		"2026-05-03T22:51:07.123Z n-10 MISSING container-toolkit (DaemonSet x does not tolerate the node's taint t:NoSchedule)\n" +
		"2026-05-03T22:51:07.123Z n-10 device-plugin-without-toolkit\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWatchJSONLines(t *testing.T) {
	got := watch(t, report.Printer{Format: report.JSON}, false, initial, repair)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want one line per change, got %d:\n%s", len(lines), got)
	}
	var l struct {
		Node     string
		Deleted  bool
		OK       bool
		Missing  []string
		Findings []string
		Present  map[string]bool
		Explain  struct {
			Missing []struct {
				Operand string
				Reasons []struct{ Code string }
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[1]), &l); err != nil {
		t.Fatal(err)
	}
	if l.Node != "n-10" || l.OK || l.Findings[0] != "device-plugin-without-toolkit" || !l.Present["device-plugin"] ||
		len(l.Explain.Missing) != 1 || l.Explain.Missing[0].Reasons[0].Code != explain.UntoleratedTaint {
		t.Errorf("line 2: %s", lines[1])
	}
	if !strings.Contains(lines[3], `"node":"n-2","deleted":true`) {
		t.Errorf("line 4 is not the deleted node: %s", lines[3])
	}
}

// Each line of a node has the operands the ClusterPolicy switches off, as
// the batch's roster says, and the lists of a node with nothing to explain
// are empty, not null; a deleted node's line has none switched off.
func TestWatchJSONExplainsEveryNode(t *testing.T) {
	off := slices.Clone(roster)
	off[0].Off = "ClusterPolicy cp: spec.driver.enabled is false"
	plain := *ok2
	plain.Explain = nil // nothing to explain
	b := verdict.Batch{Time: at, Roster: off, Changes: []verdict.Change{{After: &plain}, {Before: bad10}}}
	got := watch(t, report.Printer{Format: report.JSON}, true, b)
	want := `"explain":{"missing":[],"warnings":[],"unexpected":[],"disabled":[{"operand":"driver","reason":"ClusterPolicy cp: spec.driver.enabled is false"}],"notes":null}}` + "\n" +
		`{"time":"2026-05-03T22:51:07.123Z","node":"n-10","deleted":true,"ok":true,"asked":[],"missing":[],"findings":[],"present":{},` +
		`"explain":{"missing":[],"warnings":[],"unexpected":[],"disabled":null,"notes":null}}` + "\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("got\n%s\nwant it to end with\n%s", got, want)
	}
}

func TestWatchTable(t *testing.T) {
	got := watch(t, report.Printer{Format: report.Table}, false, initial, repair)
	want := "" +
		"NODE   STATUS    DRIVER   TOOLKIT   DEVICE-PLUGIN   ORDER\n" +
		"n-2    OK        yes      yes       yes             ok\n" +
		"n-10   FINDING   yes      MISSING   yes             device-plugin-without-toolkit\n" +
		"n-10   OK        yes      yes       yes             ok\n" +
		"n-2    DELETED   -        -         -               -\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWatchTableRedraws(t *testing.T) {
	var b bytes.Buffer
	w := report.Printer{Format: report.Table}.Watch(&b, false, true)
	for _, batch := range []verdict.Batch{initial, repair} {
		if err := w.Batch(batch); err != nil {
			t.Fatal(err)
		}
	}
	frames := strings.Split(b.String(), "\x1b[H\x1b[2J")
	if len(frames) != 3 {
		t.Fatalf("want two frames, got %q", b.String())
	}
	want := "NODE   STATUS   DRIVER   TOOLKIT   DEVICE-PLUGIN   ORDER\n" +
		"n-10   OK       yes      yes       yes             ok\n\n1 node, 0 with findings; updated 22:51:08\n"
	if frames[2] != want {
		t.Errorf("last frame\n%s\nwant\n%s", frames[2], want)
	}
}

func TestWatchYAMLDocuments(t *testing.T) {
	got := watch(t, report.Printer{Format: report.YAML}, false, repair)
	docs := strings.Split(got, "---\n")
	if len(docs) != 3 || docs[0] != "" || !strings.Contains(docs[1], "node: n-10\n") || !strings.Contains(docs[2], "deleted: true\n") {
		t.Errorf("want two YAML documents, the fixed node and the deleted one:\n%s", got)
	}
}

func TestWatchFormats(t *testing.T) {
	if _, err := report.ParseFormat("csv", report.Wide); err == nil || err.Error() != `unknown output format "csv" (want text, json, yaml, table, wide)` {
		t.Errorf("ParseFormatOf(csv) = %v", err)
	}
	if _, err := report.ParseFormat("wide"); err == nil {
		t.Error("the one-shot judges took -o wide")
	}
}
