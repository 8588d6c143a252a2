package report_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
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
	if err := (report.Printer{Format: report.Text}).Upgrades(&b, r); err != nil {
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
