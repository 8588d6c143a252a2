package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// healthOf is a result whose GPU nodes are usable but the one named bad.
func healthOf(bad string, nodes ...string) *outcome.Result {
	r := &outcome.Result{}
	for _, n := range nodes {
		h := &health.Node{Node: n, Judged: true, Usable: n != bad, Blocked: []string{}}
		if n == bad {
			h.Cause = &health.Cause{Code: "crash-loop", Operand: "driver", Message: "the driver <crashes>"}
		}
		r.Nodes = append(r.Nodes, verdict.Verdict{Node: n, Health: h})
	}
	return r
}

// run is a fleet of two clusters judged, with the same node names, and one
// that could not be.
var run = []outcome.Cluster{
	{Context: "west", Server: "https://west", Result: healthOf("", "gpu-1", "gpu-10")},
	{Context: "down", Server: "https://down", Err: errors.New("dial tcp:\n  connection refused")},
	{Context: "east", Server: "https://east", Result: healthOf("gpu-1", "gpu-1", "gpu-2")},
}

func clusters(t *testing.T, p report.Printer, cs []outcome.Cluster, view report.View) string {
	t.Helper()
	var b bytes.Buffer
	if err := p.Clusters(&b, io.Discard, cs, view); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// In text each line is stamped with its context; a cluster's lines, less
// the stamp, are what it prints alone.
func TestClustersText(t *testing.T) {
	p := report.Printer{Format: report.Text}
	got := clusters(t, p, run, report.HealthView)
	want := "west: gpu-1 READY\nwest: gpu-10 READY\ndown: error: dial tcp: connection refused\neast: gpu-1 UNUSABLE crash-loop driver\neast: gpu-2 READY\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, c := range []outcome.Cluster{run[0], run[2]} {
		var part strings.Builder
		for line := range strings.Lines(got) {
			if rest, ok := strings.CutPrefix(line, c.Context+": "); ok {
				part.WriteString(rest)
			}
		}
		if a := alone(t, p, c.Result, report.HealthView); part.String() != a {
			t.Errorf("%s's part %q, alone %q", c.Context, part.String(), a)
		}
	}
}

// Tables are one table behind a CONTEXT column; errors follow it.
func TestClustersTable(t *testing.T) {
	got := clusters(t, report.Printer{Format: report.Table}, run, report.HealthView)
	want := "" +
		"CONTEXT   NODE     STATUS     CAUSE        OPERAND   BLOCKS\n" +
		"west      gpu-1    READY\n" +
		"west      gpu-10   READY\n" +
		"east      gpu-1    UNUSABLE   crash-loop   driver\n" +
		"east      gpu-2    READY\n" +
		"\n" +
		"down: error: dial tcp: connection refused\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	got = clusters(t, report.Printer{Format: report.Table, NoHeaders: true}, run[2:], report.HealthView)
	if want := "east   gpu-1   UNUSABLE   crash-loop   driver\neast   gpu-2   READY\n"; got != want {
		t.Errorf("--no-headers: got\n%s\nwant\n%s", got, want)
	}
}

// JSON is {"clusters":[…]}, each entry the context, the server, and the
// error or the fields the cluster prints alone; YAML is the same value.
func TestClustersData(t *testing.T) {
	got := clusters(t, report.Printer{Format: report.JSON}, run, report.HealthView)
	var doc struct {
		Clusters []map[string]any `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Clusters) != 3 {
		t.Fatalf("%d entries", len(doc.Clusters))
	}
	if want := map[string]any{"context": "down", "server": "https://down", "error": "dial tcp: connection refused"}; !reflect.DeepEqual(doc.Clusters[1], want) {
		t.Errorf("the error entry %v, want %v", doc.Clusters[1], want)
	}
	for _, i := range []int{0, 2} {
		e := doc.Clusters[i]
		if e["context"] != run[i].Context || e["server"] != run[i].Server {
			t.Errorf("entry %d: %v", i, e)
		}
		delete(e, "context")
		delete(e, "server")
		var a map[string]any
		if err := json.Unmarshal([]byte(alone(t, report.Printer{Format: report.JSON}, run[i].Result, report.HealthView)), &a); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(e, a) {
			t.Errorf("entry %d %v, alone %v", i, e, a)
		}
	}
	y, err := yaml.JSONToYAML([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if got := clusters(t, report.Printer{Format: report.YAML}, run, report.HealthView); got != string(y) {
		t.Errorf("YAML:\n%s\nwant the JSON's value:\n%s", got, y)
	}
}

// JUnit is a suite per cluster, named by its context, its cases as alone;
// one that could not be judged is a case in error.
func TestClustersJUnit(t *testing.T) {
	got := clusters(t, report.Printer{Format: report.JUnit}, run, report.HealthView)
	if err := validateJUnit(t, []byte(got)); err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	for _, want := range []string{
		`<testsuites name="gpuops health" tests="5" failures="1" errors="1" time="0">`,
		`<testsuite name="west" tests="2" failures="0" errors="0" skipped="0" time="0" hostname="https://west">`,
		`<testsuite name="down" tests="1" failures="0" errors="1" skipped="0" time="0" hostname="https://down">`,
		`<error message="dial tcp: connection refused" type="error"></error>`,
		`<failure message="UNUSABLE crash-loop driver" type="crash-loop">the driver &lt;crashes&gt;</failure>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("JUnit lacks %s:\n%s", want, got)
		}
	}
	if a := alone(t, report.Printer{Format: report.JUnit}, run[0].Result, report.HealthView); strings.Contains(a, "hostname") {
		t.Errorf("alone, a suite has no hostname:\n%s", a)
	}
}

// summary adds the fleet's total, by group, as the context (fleet).
func TestClustersSummaryTotal(t *testing.T) {
	cs := []outcome.Cluster{
		{Context: "a", Result: &outcome.Result{Fleet: &fleet}},
		{Context: "b", Result: &outcome.Result{Fleet: &fleet}},
		{Context: "c", Err: errors.New("forbidden")},
	}
	got := clusters(t, report.Printer{Format: report.Text}, cs, report.SummaryView)
	for _, want := range []string{
		"a: by example.com/pool\n",
		"b: a100-2 ORDER device-plugin-without-toolkit (a device-plugin pod runs here and no container-toolkit pod does)\n",
		"c: error: forbidden\n",
		"(fleet): contexts=3 errors=1 nodes=6 with-findings=2\n(fleet): by example.com/pool\n(fleet): a100 nodes=4 with-findings=2\n",
		"(fleet):   order             device-plugin-without-toolkit=2\n(fleet): (none) nodes=2 with-findings=0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(fleet): a100-2") {
		t.Error("the total lists nodes; they are the clusters'")
	}
	var doc struct {
		Fleet struct {
			OK                bool `json:"ok"`
			Contexts, Errors  int
			Nodes             int `json:"nodes"`
			NodesWithFindings int `json:"nodesWithFindings"`
		} `json:"fleet"`
	}
	if err := json.Unmarshal([]byte(clusters(t, report.Printer{Format: report.JSON}, cs, report.SummaryView)), &doc); err != nil {
		t.Fatal(err)
	}
	if f := doc.Fleet; f.OK || f.Contexts != 3 || f.Errors != 1 || f.Nodes != 6 || f.NodesWithFindings != 2 {
		t.Errorf("fleet %+v", f)
	}
	if got := clusters(t, report.Printer{Format: report.Name}, cs, report.SummaryView); got != "a: node/a100-2\nb: node/a100-2\nc: error: forbidden\n" {
		t.Errorf("-o name: %q", got)
	}
}

// The page of many clusters: a row per cluster and the total, the groups
// by cluster then pool, the nodes named by context.
func TestClustersHTML(t *testing.T) {
	cs := []outcome.Cluster{
		{Context: "a", Server: "https://a", Result: &outcome.Result{Fleet: &fleet}},
		{Context: "c", Server: "https://c", Err: errors.New("forbidden")},
	}
	var b bytes.Buffer
	holds, err := report.ClustersHTML(&b, cs, report.Source{Namespace: "gpu-operator"})
	if err != nil || holds != "2 contexts, 3 nodes, 2 findings" {
		t.Fatalf("%q, %v", holds, err)
	}
	page := b.String()
	for _, want := range []string{
		`<h2>Clusters (2)</h2>`,
		`1 of 2 contexts could not be judged</p>`,
		`<tr><th scope="row" class="mono">c</th><td class="mono">https://c</td><td colspan="4"><span class="m">✗ not judged:</span> forbidden</td></tr>`,
		`<option>a · a100</option><option>a · (none)</option>`,
		`id="n-a/a100-2"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	var one bytes.Buffer
	if err := report.HTML(&one, fleet, nil, report.Source{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(one.String(), `id="clusters"`) {
		t.Error("a page of one cluster has a clusters table")
	}
}
