package metrics_test

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/metrics"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// TestTextGolden: every family of the verdict written at once, byte for
// byte as testdata/scrape.golden holds it: the text is what Prometheus,
// the shipped alerts and the dashboard read, so a change of how it is
// written must not change a byte of it (GPUOPS_UPDATE_GOLDEN=1 records
// it again).
func TestTextGolden(t *testing.T) {
	e := metrics.New(synced)
	since := t0.Add(-time.Hour)
	gpu := func(v *verdict.Verdict, h health.Node) *verdict.Verdict {
		h.Node, h.Judged = v.Node, true
		v.Health = &h
		return v
	}
	a := gpu(node("a", all, []string{}, []string{}, []string{"toolkit", "device-plugin"}), health.Node{Usable: true})
	a.Group = "A100"
	a.Upgrade = &upgrade.Node{Node: "a", Verdict: upgrade.Done}
	b := gpu(node("b", all, []string{"container-toolkit"}, []string{"device-plugin-without-toolkit"}, []string{"device-plugin"},
		explain.Reason{Code: explain.NodeCordoned}, explain.Reason{Code: explain.PodPending}, explain.Reason{Code: explain.PodPending}),
		health.Node{Cause: &health.Cause{Code: "order", Operand: "device-plugin", Message: "no toolkit"},
			Also:         []health.Cause{{Code: health.GPUsNotAdvertised, Operand: "device-plugin"}},
			Hints:        []signature.Hint{{Code: signature.NVMLNotFound, Pod: "p1"}, {Code: signature.NVMLNotFound, Pod: "p2"}, {Code: signature.DriverLibraryMismatch, Pod: "p3"}},
			OutOfService: &ledger.Entry{Actor: ledger.Gpuops, Cordoned: true}})
	b.Group = "(none)"
	b.Upgrade = &upgrade.Node{Node: "b", State: "upgrade-failed", Verdict: upgrade.Failed, Since: &since}
	c := gpu(node("c", all, []string{}, []string{}, []string{"toolkit", "device-plugin"}),
		health.Node{Usable: true, OutOfService: &ledger.Entry{Actor: ledger.Person, Cordoned: true}})
	c.Audit.Stuck = []string{"device-plugin"}
	c.Group = "H100 \"SXM\"\\x"
	cpu := node("e", nil, []string{}, []string{}, nil)
	cpu.Health = &health.Node{Node: "e", Usable: true}
	ro := &upgrade.Rollout{Policy: &snapshot.UpgradePolicy{},
		Budget: upgrade.Budget{Nodes: 3, MaxParallel: 1, MaxUnavailable: 1, Available: 0, InProgress: []string{"b"}, Unavailable: []string{"b", "c", "n"}},
		Pools:  []upgrade.Pool{{Name: "gpu-pool", Budget: upgrade.Budget{MaxUnavailable: 2, Available: 2}, Counts: map[string]int{upgrade.Waiting: 2}}},
		Counts: map[string]int{upgrade.Done: 1, upgrade.Failed: 1}}
	e.Judged(verdict.Batch{Time: t0.Add(1500 * time.Millisecond), Initial: true, Roster: roster, Rules: rules,
		Changes: []verdict.Change{{After: c}, {After: a}, {After: cpu}, {After: b}}, Rollout: ro})
	var got bytes.Buffer
	if err := e.WriteText(&got); err != nil {
		t.Fatal(err)
	}
	const file = "testdata/scrape.golden"
	if os.Getenv("GPUOPS_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("the scrape's text differs from %s; got:\n%s", file, got.String())
	}
}
