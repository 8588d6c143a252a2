package report_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/ledger"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/upgrade"
)

var source = report.Source{Context: "prod-eu", Server: "https://10.0.0.1:6443", Namespace: "gpu-operator", Selector: "pool in (a100)",
	Taken: time.Date(2026, 3, 1, 14, 5, 0, 0, time.FixedZone("CET", 3600))}

func page(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	if err := report.HTML(&b, fleet, nil, source); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLSaysWhereAndWhen(t *testing.T) {
	p := page(t)
	for _, want := range []string{
		`<dd class="mono">prod-eu</dd>`, `<dd class="mono">https://10.0.0.1:6443</dd>`, `<dd class="mono">gpu-operator</dd>`,
		`<time datetime="2026-03-01T13:05:00Z">2026-03-01 13:05:00 UTC</time>`, `3 matching <code>pool in (a100)</code>`,
		`✗</span> 2 findings on 1 node</p>`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Everything the page needs is in it: no URL but its own anchors and an
// empty data: icon, and a content security policy that forbids fetching.
func TestHTMLSelfContained(t *testing.T) {
	p := page(t)
	if !strings.Contains(p, `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"`) {
		t.Error("no content security policy forbidding fetches")
	}
	for _, m := range regexp.MustCompile(`(?:src|href|action)="([^"]*)"`).FindAllStringSubmatch(p, -1) {
		if !strings.HasPrefix(m[1], "#") && m[1] != "data:," {
			t.Errorf("reference outside the page: %s", m[0])
		}
	}
	if strings.Contains(p, "@import") || strings.Contains(p, "url(") {
		t.Error("CSS that fetches")
	}
}

// Every node has a grid row, the ones with findings first in their group;
// reasons are escaped text.
func TestHTMLGrid(t *testing.T) {
	p := page(t)
	rows := regexp.MustCompile(`<tr class="n( f)?" id="n-([^"]+)">`).FindAllStringSubmatch(p, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[2]+r[1])
	}
	if want := "a100-2 f|a100-1|bare"; strings.Join(got, "|") != want {
		t.Errorf("grid rows %q, want %s", got, want)
	}
	for _, want := range []string{
		`<td class="m" title="driver: missing — node is cordoned; no pod &lt;yet&gt;">✗</td>`,
		`<td class="d" title="container-toolkit: disabled">–</td>`,
		`<td class="p" title="container-toolkit: paused">‖</td>`,
		`<td>✓</td>`,
		`<section data-g="(none)">`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p, "<yet>") {
		t.Error("a reason reached the page unescaped")
	}
}

func TestHTMLNoFindings(t *testing.T) {
	healthy := fleet
	healthy.Nodes = healthy.Nodes[:1]
	var b bytes.Buffer
	if err := report.HTML(&b, healthy, nil, source); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `class="verdict good"`) || !strings.Contains(b.String(), "<h2>Findings (0)</h2>") {
		t.Error("a fleet without findings must say so")
	}
}

// A node that cannot run GPU work shows its root cause in the grid's
// health column, the findings count it; its group counts it too. A node
// out of service says who took it out and since when (the ledger), and
// its group counts them by actor as summary's out-of-service line does.
func TestHTMLHealth(t *testing.T) {
	f := summary.Fleet{GroupBy: "pool", Operands: operand.Lab[:1],
		Groups: []summary.Group{{Name: "a100", Nodes: 2, Operands: []summary.OperandCounts{{Operand: "driver"}},
			Health: &summary.HealthCounts{Ready: 1, Unusable: 1, Causes: []summary.CauseCount{{Code: "crash-loop", Operand: "driver", Nodes: 1}},
				GPUs: &summary.GPUCounts{GPUs: health.GPUs{Asked: 16, Advertised: 8}, Nodes: 2}, OutOfService: map[string]int{ledger.Person: 1}}}},
		Nodes: []summary.Node{
			{Name: "gpu-1", Group: "a100", Cells: make([]summary.Cell, 1), Findings: []summary.Finding{}, Health: &health.Node{Node: "gpu-1", Judged: true, Usable: true,
				OutOfService: &ledger.Entry{Actor: ledger.Person, By: "kubectl-cordon", Cordoned: true, Since: &cordonedAt}}},
			{Name: "gpu-2", Group: "a100", Cells: make([]summary.Cell, 1), Findings: []summary.Finding{},
				Health: &health.Node{Node: "gpu-2", Judged: true, Cause: &health.Cause{Code: "crash-loop", Operand: "driver", Message: "the driver crash-loops"}, Blocked: []string{"container-toolkit"}}},
		}}
	var b bytes.Buffer
	if err := report.HTML(&b, f, nil, source); err != nil {
		t.Fatal(err)
	}
	p := b.String()
	for _, want := range []string{
		`<th>Health</th>`, `✓ 1 ready`, `✗ 1 unusable`, `<code>crash-loop</code> driver ×1`, `GPUs: 8 advertised of 16 asked`,
		`<span class="r">✓ ready</span>`, `<span class="m" title="the driver crash-loops">✗ crash-loop</span> <code>driver</code>`,
		`1 unusable GPU node, their root causes in the grid's health column)`,
		`out of service: <span class="mono">person=1</span>`,
		`<span class="r">✓ ready</span><p title="cordoned by person (kubectl-cordon) since 2026-12-04T10:00:00Z">out of service: person since <time>2026-12-04T10:00:00Z</time></p>`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(p, "out of service: "); n != 2 {
		t.Errorf("%d mentions of out of service, want 2: the group's and gpu-1's (gpu-2 is in service)", n)
	}
}

// A rollout in trouble has its own section: the counts and budget lines
// and each node not done, the failed one marked; a settled one has none.
func TestHTMLRollout(t *testing.T) {
	f := summary.Fleet{GroupBy: "pool", Operands: operand.Lab[:1],
		Groups: []summary.Group{{Name: "a100", Nodes: 1, Operands: []summary.OperandCounts{{Operand: "driver"}}, Upgrades: map[string]int{upgrade.Failed: 1}}},
		Nodes:  []summary.Node{{Name: "gpu-1", Group: "a100", Cells: make([]summary.Cell, 1), Findings: []summary.Finding{}}},
		Rollout: &upgrade.Rollout{Budget: upgrade.Budget{Nodes: 1, MaxParallel: 1, MaxUnavailable: 1}, Policy: &snapshot.UpgradePolicy{},
			Nodes:  []upgrade.Node{{Node: "gpu-1", State: "upgrade-failed", Verdict: upgrade.Failed, Cause: "driver pod restarted 11 times"}},
			Counts: map[string]int{upgrade.Failed: 1}},
	}
	var b bytes.Buffer
	if err := report.HTML(&b, f, nil, source); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<section id="upgrade">`, `<p class="mono">rollout: 1 node failed=1</p>`, `<p class="mono">by pool</p>`,
		`<p class="mono">budget (ClusterPolicy): maxParallelUpgrades 1, maxUnavailable 1 of 1 node, 0 free</p>`,
		`<a href="#n-gpu-1">gpu-1</a></th><td><span class="m">✗ failed</span></td><td><code>upgrade-failed</code></td><td></td><td>driver pod restarted 11 times</td>`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	f.Rollout.Counts = map[string]int{upgrade.Done: 1}
	b.Reset()
	if err := report.HTML(&b, f, nil, source); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="upgrade"`) {
		t.Error("a settled rollout has a section")
	}
}
