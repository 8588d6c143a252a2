package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
)

// The rollout in text: counts by verdict, the budget and who uses it, a
// line per node not done with its state, since when and why.
func TestUpgradesText(t *testing.T) {
	since := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r := &upgrade.Rollout{
		Policy: &snapshot.UpgradePolicy{AutoUpgrade: true, MaxParallelUpgrades: 1},
		Budget: upgrade.Budget{Nodes: 4, MaxParallel: 1, MaxUnavailable: 1, InProgress: []string{"gpu-2"}, Unavailable: []string{"gpu-3"}},
		Nodes: []upgrade.Node{
			{Node: "gpu-1", State: "upgrade-done", Verdict: upgrade.Done},
			{Node: "gpu-2", State: "drain-required", Verdict: upgrade.InProgress, Since: &since},
			{Node: "gpu-4", State: "upgrade-required", Verdict: upgrade.Waiting, Cause: "maxUnavailable 1 used by gpu-3 (cordoned by kubectl-cordon)"},
		},
		Counts: map[string]int{upgrade.Done: 1, upgrade.InProgress: 1, upgrade.Waiting: 1},
	}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.Text}).Result(&b, io.Discard, rolledOut(r, nil), report.UpgradesView); err != nil {
		t.Fatal(err)
	}
	want := "rollout: 3 nodes done=1 in-progress=1 waiting=1\n" +
		"budget (ClusterPolicy): maxParallelUpgrades 1, maxUnavailable 1 of 4 nodes, 0 free; upgrading: gpu-2; unavailable: gpu-3\n" +
		"gpu-2 in-progress drain-required since 2026-12-01T09:00:00Z\n" +
		"gpu-4 waiting upgrade-required: maxUnavailable 1 used by gpu-3 (cordoned by kubectl-cordon)\n"
	if b.String() != want {
		t.Errorf("upgrades:\n%s\nwant:\n%s", b.String(), want)
	}
}

// Grouped (--group-by) and NVIDIADriver pools: counts per group, then each
// pool's counts above its budget; JSON carries the groups beside the
// rollout's fields.
func TestUpgradesGroupedAndPools(t *testing.T) {
	r := &upgrade.Rollout{
		Pools: []upgrade.Pool{
			{Name: "a100", Budget: upgrade.Budget{Nodes: 2, MaxParallel: 1, MaxUnavailable: 1, Available: 1}, Counts: map[string]int{upgrade.Done: 2}},
			{Name: "h100", Budget: upgrade.Budget{Nodes: 1, MaxParallel: 1, MaxUnavailable: 1, InProgress: []string{"h-1"}}, Counts: map[string]int{upgrade.Failed: 1}},
		},
		Nodes: []upgrade.Node{
			{Node: "a-1", Verdict: upgrade.Done, Pool: "a100"},
			{Node: "a-2", Verdict: upgrade.Done, Pool: "a100"},
			{Node: "h-1", State: "upgrade-failed", Verdict: upgrade.Failed, Cause: "driver pod restarted 11 times", Pool: "h100"},
		},
		Counts: map[string]int{upgrade.Done: 2, upgrade.Failed: 1},
	}
	g := &summary.Fleet{GroupBy: "pool", Groups: []summary.Group{
		{Name: "east", Upgrades: map[string]int{upgrade.Done: 1, upgrade.Failed: 1}},
		{Name: "west", Upgrades: map[string]int{upgrade.Done: 1}},
	}}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.Text}).Result(&b, io.Discard, rolledOut(r, g), report.UpgradesView); err != nil {
		t.Fatal(err)
	}
	want := "rollout: 3 nodes done=2 failed=1\n" +
		"by pool\n" +
		"  east done=1 failed=1\n" +
		"  west done=1\n" +
		"rollout (NVIDIADriver a100): done=2\n" +
		"budget (NVIDIADriver a100): maxParallelUpgrades 1, maxUnavailable 1 of 2 nodes, 1 free\n" +
		"rollout (NVIDIADriver h100): failed=1\n" +
		"budget (NVIDIADriver h100): maxParallelUpgrades 1, maxUnavailable 1 of 1 node, 0 free; upgrading: h-1\n" +
		"h-1 failed upgrade-failed: driver pod restarted 11 times\n"
	if b.String() != want {
		t.Errorf("upgrades:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := (report.Printer{Format: report.JSON}).Result(&b, io.Discard, rolledOut(r, g), report.UpgradesView); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Pools []struct {
			Name   string
			Counts map[string]int
		}
		Counts  map[string]int
		Grouped *struct {
			Groups []struct{ Counts map[string]int }
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Counts[upgrade.Failed] != 1 || len(got.Pools) != 2 || got.Pools[1].Counts[upgrade.Failed] != 1 || got.Grouped == nil || len(got.Grouped.Groups) != 2 || got.Grouped.Groups[0].Counts[upgrade.Failed] != 1 {
		t.Errorf("json: %s", b.String())
	}
}
