package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/workload"
)

func cellOf(states ...summary.State) summary.Cell {
	var c summary.Cell
	for _, s := range states {
		c |= 1 << s
	}
	return c
}

// fleet is a hand-made fleet view: two groups, one node with a missing
// operand and a broken rule, one paused, one disabled.
var fleet = summary.Fleet{
	GroupBy:  "example.com/pool",
	Operands: operand.Lab[:2],
	Rules:    []operand.Rule{operand.DeviceRule},
	Groups: []summary.Group{
		{Name: "a100", Nodes: 2, Findings: 1, Operands: []summary.OperandCounts{
			{Operand: "driver", Counts: summary.Counts{2, 1, 1, 0, 0}},
			{Operand: "container-toolkit", Counts: summary.Counts{0, 0, 0, 1, 1}},
		}, Order: []summary.RuleCount{{Finding: "device-plugin-without-toolkit", Nodes: 1}}},
		{Name: summary.NoGroup, Nodes: 1, Operands: []summary.OperandCounts{
			{Operand: "driver", Counts: summary.Counts{}},
			{Operand: "container-toolkit", Counts: summary.Counts{}},
		}, Order: []summary.RuleCount{{Finding: "device-plugin-without-toolkit"}}},
	},
	Nodes: []summary.Node{
		{Name: "a100-1", Group: "a100", Cells: []summary.Cell{cellOf(summary.Asked, summary.Running), cellOf(summary.Paused)}, Findings: []summary.Finding{}},
		{Name: "a100-2", Group: "a100", Cells: []summary.Cell{cellOf(summary.Asked, summary.Missing), cellOf(summary.Disabled)}, Findings: []summary.Finding{
			{Kind: summary.MissingFinding, Subject: "driver", Reasons: []explain.Reason{{Code: explain.NodeCordoned, Message: "node is cordoned"}, {Code: explain.NoPodYet, Message: "no pod <yet>"}}},
			{Kind: summary.OrderFinding, Subject: "device-plugin-without-toolkit", Reasons: []explain.Reason{explain.Order(operand.DeviceRule)}},
		}},
		{Name: "bare", Group: summary.NoGroup, Cells: []summary.Cell{0, 0}, Findings: []summary.Finding{}},
	},
}

func summarize(t *testing.T, p report.Printer) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Result(&b, io.Discard, grouped(fleet), report.SummaryView); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSummaryText(t *testing.T) {
	want := "by example.com/pool\n" +
		"a100 nodes=2 with-findings=1\n" +
		"  driver            asked=2 running=1 missing=1 paused=0 disabled=0\n" +
		"  container-toolkit asked=0 running=0 missing=0 paused=1 disabled=1\n" +
		"  order             device-plugin-without-toolkit=1\n" +
		"(none) nodes=1 with-findings=0\n" +
		"  driver            asked=0 running=0 missing=0 paused=0 disabled=0\n" +
		"  container-toolkit asked=0 running=0 missing=0 paused=0 disabled=0\n" +
		"  order             ok\n" +
		"a100-2 MISSING driver (node is cordoned; no pod <yet>)\n" +
		"a100-2 ORDER device-plugin-without-toolkit (a device-plugin pod runs here and no container-toolkit pod does)\n"
	if got := summarize(t, report.Printer{Format: report.Text}); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
}

func TestSummaryTable(t *testing.T) {
	want := "" +
		"GROUP    NODES   OPERAND             ASKED   RUNNING   MISSING   PAUSED   DISABLED\n" +
		"a100     2       driver              2       1         1         0        0\n" +
		"a100     2       container-toolkit   0       0         0         1        1\n" +
		"(none)   1       driver              0       0         0         0        0\n" +
		"(none)   1       container-toolkit   0       0         0         0        0\n" +
		"\n" +
		"GROUP   BROKEN RULE                     NODES\n" +
		"a100    device-plugin-without-toolkit   1\n" +
		"\n" +
		"NODE     GROUP   STATUS    SUBJECT                         WHY\n" +
		"a100-2   a100    MISSING   driver                          node is cordoned; no pod <yet>\n" +
		"a100-2   a100    ORDER     device-plugin-without-toolkit   a device-plugin pod runs here and no container-toolkit pod does\n"
	if got := summarize(t, report.Printer{Format: report.Table}); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	if got := summarize(t, report.Printer{Format: report.Table, Color: true}); !strings.Contains(got, "\x1b[31m1\x1b[0m") || !strings.Contains(got, "\x1b[2m0\x1b[0m") {
		t.Errorf("coloured table: missing counts red, zeros faint:\n%q", got)
	}
}

// JSON has every group's counts and only the nodes with findings; YAML is
// the same value.
func TestSummaryJSON(t *testing.T) {
	var got struct {
		OK      bool            `json:"ok"`
		GroupBy string          `json:"groupBy"`
		Groups  []summary.Group `json:"groups"`
		Nodes   []summary.Node  `json:"nodes"`
	}
	out := summarize(t, report.Printer{Format: report.JSON})
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.OK || got.GroupBy != "example.com/pool" || len(got.Groups) != 2 || len(got.Nodes) != 1 || got.Nodes[0].Name != "a100-2" || len(got.Nodes[0].Findings) != 2 {
		t.Fatalf("JSON: %s", out)
	}
	if c := got.Groups[0].Operands[0].Counts; c != fleet.Groups[0].Operands[0].Counts {
		t.Errorf("driver counts of a100: %v, want %v", c, fleet.Groups[0].Operands[0].Counts)
	}
	if strings.Index(out, `"asked"`) > strings.Index(out, `"running"`) {
		t.Error("counts must come in state order")
	}
	y := summarize(t, report.Printer{Format: report.YAML})
	if !strings.Contains(y, "groupBy: example.com/pool") || !strings.Contains(y, "subject: device-plugin-without-toolkit") {
		t.Errorf("YAML:\n%s", y)
	}
}

func TestSummaryEmpty(t *testing.T) {
	var b bytes.Buffer
	empty := summary.Fleet{GroupBy: "example.com/pool"}
	if err := (report.Printer{Format: report.JSON}).Result(&b, io.Discard, grouped(empty), report.SummaryView); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "null") || !strings.Contains(b.String(), `"ok": true`) {
		t.Errorf("empty fleet: %s", b.String())
	}
}

// A rollout under way shows in the summary: each group's counts by
// verdict, then the fleet's counts and budget; a settled one (every node
// done) adds nothing, so a quiet fleet reads as before.
func TestSummaryRollout(t *testing.T) {
	f := fleet
	f.Groups = slices.Clone(fleet.Groups)
	f.Groups[0].Upgrades = map[string]int{upgrade.Done: 1, upgrade.Waiting: 1}
	f.Groups[1].Upgrades = map[string]int{upgrade.Done: 1}
	f.Rollout = &upgrade.Rollout{
		Policy: &snapshot.UpgradePolicy{AutoUpgrade: true, MaxParallelUpgrades: 1},
		Budget: upgrade.Budget{Nodes: 3, MaxParallel: 1, MaxUnavailable: 1, Unavailable: []string{"a100-2"}},
		Counts: map[string]int{upgrade.Done: 2, upgrade.Waiting: 1},
	}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.Text}).Result(&b, io.Discard, grouped(f), report.SummaryView); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"  order             device-plugin-without-toolkit=1\n  upgrade           done=1 waiting=1\n(none) nodes=1",
		"rollout: 0 nodes done=2 waiting=1\nbudget (ClusterPolicy): maxParallelUpgrades 1, maxUnavailable 1 of 3 nodes, 0 free; unavailable: a100-2\na100-2 MISSING",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(none) nodes=1 with-findings=0\n  driver            asked=0 running=0 missing=0 paused=0 disabled=0\n  container-toolkit asked=0 running=0 missing=0 paused=0 disabled=0\n  order             ok\n  upgrade") {
		t.Errorf("a settled group shows its rollout:\n%s", got)
	}
	b.Reset()
	if err := (report.Printer{Format: report.Table}).Result(&b, io.Discard, grouped(f), report.SummaryView); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "GROUP   UPGRADE   NODES\na100    done      1\na100    waiting   1\n") {
		t.Errorf("table lacks the rollout:\n%s", b.String())
	}
	b.Reset()
	if err := (report.Printer{Format: report.JSON}).Result(&b, io.Discard, grouped(f), report.SummaryView); err != nil {
		t.Fatal(err)
	}
	var data struct {
		Groups  []summary.Group
		Rollout struct{ Counts map[string]int }
	}
	if err := json.Unmarshal(b.Bytes(), &data); err != nil {
		t.Fatal(err)
	}
	if data.Groups[0].Upgrades[upgrade.Waiting] != 1 || data.Rollout.Counts[upgrade.Waiting] != 1 {
		t.Errorf("json lacks the rollout: %s", b.String())
	}

	f.Groups[0].Upgrades = map[string]int{upgrade.Done: 2}
	f.Rollout.Counts = map[string]int{upgrade.Done: 3}
	b.Reset()
	if err := (report.Printer{Format: report.Text}).Result(&b, io.Discard, grouped(f), report.SummaryView); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "upgrade") || strings.Contains(b.String(), "rollout") {
		t.Errorf("a settled rollout shows:\n%s", b.String())
	}
}

// A group's GPU nodes out of service, by who took them out: one line after
// health, only when some are.
func TestSummaryOutOfService(t *testing.T) {
	f := fleet
	f.Groups = slices.Clone(fleet.Groups)
	f.Groups[0].Health = &summary.HealthCounts{Ready: 1, Unusable: 1, Causes: []summary.CauseCount{{Code: "order", Operand: "device-plugin", Nodes: 1}},
		OutOfService: map[string]int{"person": 1, "gpuops": 1}}
	var b bytes.Buffer
	r := grouped(f)
	if err := (report.Printer{Format: report.Text}).Result(&b, io.Discard, r, report.SummaryView); err != nil {
		t.Fatal(err)
	}
	if want := "  health            ready=1 unusable=1 order/device-plugin=1\n  out-of-service    gpuops=1 person=1\n"; !strings.Contains(b.String(), want) {
		t.Errorf("text:\n%s\nwant the lines:\n%s", b.String(), want)
	}
}

// TestSummaryCapacity: with the capacity counted, summary's text, table
// and JSON and the HTML page carry gpuops capacity's block, from the same
// value and its one renderer.
func TestSummaryCapacity(t *testing.T) {
	c := &workload.Capacity{GroupBy: "example.com/pool", Pools: []workload.Pool{{Name: "a100", Nodes: 2, Physical: 16, Resources: []workload.Resource{{
		Resource: snapshot.GPUResource, Kind: workload.Whole, Nodes: 2, Advertised: 16, Allocatable: 15, Unhealthy: 1, Allocated: 4, Free: 3,
		Stranded: map[string]int64{workload.StrandedCordoned: 8}, LargestFree: 3, LargestFreeNode: "a100-1"}}}}}
	var capacity bytes.Buffer
	if err := (report.Printer{Format: report.Text}).Capacity(&capacity, io.Discard, c); err != nil {
		t.Fatal(err)
	}
	r := grouped(fleet)
	r.Capacity = c
	block := "gpus by example.com/pool\n"
	for _, line := range strings.SplitAfter(capacity.String(), "\n") {
		if line != "" {
			block += "  " + line
		}
	}
	for _, f := range []report.Format{report.Text, report.Table} {
		var b bytes.Buffer
		if err := (report.Printer{Format: f}).Result(&b, io.Discard, r, report.SummaryView); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), block) {
			t.Errorf("summary -o %s:\n%s\nwant the block\n%s", f, b.String(), block)
		}
	}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JSON}).Result(&b, io.Discard, r, report.SummaryView); err != nil {
		t.Fatal(err)
	}
	var got struct{ Capacity *workload.Capacity }
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got.Capacity == nil || got.Capacity.Pools[0].Resources[0].Stranded[workload.StrandedCordoned] != 8 {
		t.Errorf("summary -o json: %v %+v", err, got.Capacity)
	}
	var page bytes.Buffer
	if err := report.HTML(&page, fleet, c, source); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(capacity.String(), "\n")
	if !strings.Contains(page.String(), `<section id="capacity">`) || !strings.Contains(page.String(), `<p class="mono">`+first+`</p>`) {
		t.Errorf("the page has no capacity section with %q", first)
	}
}
