package report_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
)

// The outputs kubectl users expect: -o name, -o wide, --no-headers.

func TestAuditNameWideNoHeaders(t *testing.T) {
	header := "NODE   STATUS       OPERAND                     WHY\n"
	rows := "n-2    OK\n" +
		"n-2    UNEXPECTED   driver                      pod d is Running\n" +
		"n-2    WARNING      nvidia.com/gpu.deploy.gfd   label is 'True'\n" +
		"n-10   MISSING      driver                      node is cordoned; no pod yet\n" +
		"n-10   MISSING      dcgm-exporter               no DaemonSet\n"
	for _, tc := range []struct {
		name string
		p    report.Printer
		want string
	}{
		{"name", report.Printer{Format: report.Name}, "node/n-10\n"},
		{"wide is the explained table", report.Printer{Format: report.Wide}, header + rows},
		{"wide, no headers", report.Printer{Format: report.Wide, NoHeaders: true}, rows},
		{"name ignores no headers", report.Printer{Format: report.Name, NoHeaders: true}, "node/n-10\n"},
		{"text ignores no headers", report.Printer{Format: report.Text, NoHeaders: true}, explained(t, report.Text)},
	} {
		var b bytes.Buffer
		if err := tc.p.Result(&b, io.Discard, audited(audits, &why), report.AuditView); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant:\n%q", tc.name, b.String(), tc.want)
		}
	}
}

// A stuck node has a finding too; a node with none is never named.
func TestAuditNameStuck(t *testing.T) {
	stuck := []judge.NodeAudit{{Node: "n-1", Missing: []string{}, Stuck: []string{"device-plugin"}}, {Node: "n-2", Missing: []string{}}}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.Name}).Result(&b, io.Discard, audited(stuck, nil), report.AuditView); err != nil {
		t.Fatal(err)
	}
	if b.String() != "node/n-1\n" {
		t.Errorf("audit -o name of a stuck node: %q", b.String())
	}
	b.Reset()
	if err := (report.Printer{Format: report.Name}).Result(&b, io.Discard, audited(stuck[1:], nil), report.AuditView); err != nil || b.Len() != 0 {
		t.Errorf("audit -o name of a healthy node: %q, %v; want nothing", b.String(), err)
	}
}

func TestOrderNameWideNoHeaders(t *testing.T) {
	broken := judge.NodeOrder{Node: "n-10", Findings: []string{operand.DeviceRule.Finding}, Rules: operand.AllRules[:2]}
	fine := judge.NodeOrder{Node: "n-2", Findings: []string{}, Rules: operand.AllRules[:2]}
	for _, tc := range []struct {
		name string
		p    report.Printer
		v    judge.NodeOrder
		want string
	}{
		{"name", report.Printer{Format: report.Name}, broken, "node/n-10\n"},
		{"name of a node in order", report.Printer{Format: report.Name}, fine, ""},
		{"wide", report.Printer{Format: report.Wide}, broken, "" +
			"NODE   VERDICT                         WHY\n" +
			"n-10   device-plugin-without-toolkit   a device-plugin pod runs here and no container-toolkit pod does\n"},
		{"wide of a node in order", report.Printer{Format: report.Wide}, fine, "NODE   VERDICT   WHY\nn-2    ok\n"},
		{"table, no headers", report.Printer{Format: report.Table, NoHeaders: true}, broken, "n-10   device-plugin-without-toolkit\n"},
		{"json ignores no headers", report.Printer{Format: report.JSON, NoHeaders: true}, fine,
			"{\n  \"node\": \"n-2\",\n  \"findings\": [],\n  \"ok\": true,\n  \"verdict\": \"ok\"\n}\n"},
	} {
		var b bytes.Buffer
		if err := tc.p.Result(&b, io.Discard, ordered(tc.v), report.OrderView); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant:\n%q", tc.name, b.String(), tc.want)
		}
	}
}

// Without headers the matrix is its rows only, the columns as wide as
// their cells, and the total line goes with the header.
func TestMatrixNoHeaders(t *testing.T) {
	if got := render(t, report.Printer{Format: report.Table, NoHeaders: true}, "matrix"); got != "n-2    yes   no\nn-10   no    yes\n" {
		t.Errorf("matrix --no-headers:\n%q", got)
	}
}

func TestSummaryName(t *testing.T) {
	if got := summarize(t, report.Printer{Format: report.Name}); got != "node/a100-2\n" {
		t.Errorf("summary -o name: %q", got)
	}
}

func TestKubectlFormatsAreOffered(t *testing.T) {
	if _, err := report.ParseFormat("name"); err == nil {
		t.Error("-o name taken without a command offering it")
	}
	for _, s := range []string{"wide", "name"} {
		if f, err := report.ParseFormat(s, report.Wide, report.Name); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
}
