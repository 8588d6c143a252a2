package report_test

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/report"
)

var why = explain.Report{
	Missing: []explain.Missing{
		{Node: "n-10", Operand: "driver", Reasons: []explain.Reason{{Code: explain.NodeCordoned, Message: "node is cordoned"}, {Code: explain.NoPodYet, Message: "no pod yet"}}},
		{Node: "n-10", Operand: "dcgm-exporter", Reasons: []explain.Reason{{Code: explain.NoDaemonSet, Message: "no DaemonSet"}}},
	},
	Warnings:   []explain.Warning{{Node: "n-2", Label: "nvidia.com/gpu.deploy.gfd", Value: "True", Message: "label is 'True'"}},
	Unexpected: []explain.Unexpected{{Node: "n-2", Operand: "driver", Pod: "d", Message: "pod d is Running"}},
}

func explained(t *testing.T, f report.Format) string {
	t.Helper()
	var b bytes.Buffer
	if err := (report.Printer{Format: f}).Result(&b, io.Discard, audited(audits, &why), report.AuditView); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestExplainedAuditText(t *testing.T) {
	want := "n-2 OK\n" +
		"n-2 UNEXPECTED driver (pod d is Running)\n" +
		"n-2 WARNING nvidia.com/gpu.deploy.gfd (label is 'True')\n" +
		"n-10 MISSING driver (node is cordoned; no pod yet)\n" +
		"n-10 MISSING dcgm-exporter (no DaemonSet)\n"
	if got := explained(t, report.Text); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
}

func TestExplainedAuditTable(t *testing.T) {
	want := "NODE   STATUS       OPERAND                     WHY\n" +
		"n-2    OK\n" +
		"n-2    UNEXPECTED   driver                      pod d is Running\n" +
		"n-2    WARNING      nvidia.com/gpu.deploy.gfd   label is 'True'\n" +
		"n-10   MISSING      driver                      node is cordoned; no pod yet\n" +
		"n-10   MISSING      dcgm-exporter               no DaemonSet\n"
	if got := explained(t, report.Table); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

// The JSON keeps the plain audit's keys and adds the reasons.
func TestExplainedAuditJSON(t *testing.T) {
	var got struct {
		OK    bool `json:"ok"`
		Nodes []struct {
			Node    string   `json:"node"`
			Missing []string `json:"missing"`
		} `json:"nodes"`
		explain.Report
	}
	if err := json.Unmarshal([]byte(explained(t, report.JSON)), &got); err != nil {
		t.Fatal(err)
	}
	if got.OK || len(got.Nodes) != 2 || got.Nodes[1].Missing[0] != "driver" {
		t.Errorf("plain audit keys: %+v", got)
	}
	if len(got.Missing) != 2 || got.Missing[0].Reasons[0].Code != explain.NodeCordoned || got.Warnings[0].Value != "True" || got.Unexpected[0].Pod != "d" {
		t.Errorf("explanations: %+v", got.Report)
	}
}

// A stuck pause is one STUCK line or row with its reason, never a WARNING
// too; the plain table gets a STUCK column only when a node has one.
func TestAuditStuck(t *testing.T) {
	stuck := []judge.NodeAudit{{Node: "n-1", Missing: []string{}, Stuck: []string{"device-plugin"}}, {Node: "n-2", Missing: []string{}}}
	r := explain.Report{Warnings: []explain.Warning{
		{Node: "n-1", Code: "paused-for-mig-change", Operand: "device-plugin", Label: "nvidia.com/gpu.deploy.device-plugin", Message: "paused 2h ago", Stuck: true},
		{Node: "n-1", Code: "paused-for-mig-change", Operand: "gpu-feature-discovery", Label: "nvidia.com/gpu.deploy.gpu-feature-discovery", Message: "paused 1m ago"},
	}}
	for _, tc := range []struct {
		f    report.Format
		why  *explain.Report
		want string
	}{
		{report.Text, nil, "n-1 STUCK device-plugin\nn-2 OK\n"},
		{report.Table, nil, "NODE   STATUS   MISSING   STUCK\nn-1    STUCK              device-plugin\nn-2    OK\n"},
		{report.Text, &r, "n-1 STUCK device-plugin (paused 2h ago)\n" +
			"n-1 WARNING nvidia.com/gpu.deploy.gpu-feature-discovery (paused 1m ago)\n" +
			"n-2 OK\n"},
		{report.Table, &r, "NODE   STATUS    OPERAND                                       WHY\n" +
			"n-1    STUCK     device-plugin                                 paused 2h ago\n" +
			"n-1    WARNING   nvidia.com/gpu.deploy.gpu-feature-discovery   paused 1m ago\n" +
			"n-2    OK\n"},
	} {
		var b bytes.Buffer
		if err := (report.Printer{Format: tc.f}).Result(&b, io.Discard, audited(stuck, tc.why), report.AuditView); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s (explained %v):\n%s\nwant:\n%s", tc.f, tc.why != nil, b.String(), tc.want)
		}
	}
}
