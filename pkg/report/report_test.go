package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/report"
)

var (
	audits = []judge.NodeAudit{
		{Node: "n-2", Missing: []string{}},
		{Node: "n-10", Missing: []string{"driver", "dcgm-exporter"}},
	}
	matrix = judge.Matrix{
		Columns: []string{"driver", "device-plugin"},
		Rows: []judge.MatrixRow{
			{Node: "n-2", Present: judge.NewPresent([]string{"driver", "device-plugin"}, "driver")},
			{Node: "n-10", Present: judge.NewPresent([]string{"driver", "device-plugin"}, "device-plugin")},
		},
		TotalPods: 2,
	}
	finding = judge.NodeOrder{Node: "n-10", Findings: []string{"device-plugin-without-toolkit"}}
	healthy = judge.NodeOrder{Node: "n-2", Findings: []string{}}
)

func render(t *testing.T, p report.Printer, what string) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	switch what {
	case "audit":
		err = p.Result(&b, io.Discard, audited(audits, nil), report.AuditView)
	case "matrix":
		err = p.Result(&b, io.Discard, tabulated(matrix), report.MatrixView)
	case "finding":
		err = p.Result(&b, io.Discard, ordered(finding), report.OrderView)
	case "healthy":
		err = p.Result(&b, io.Discard, ordered(healthy), report.OrderView)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format report.Format
		color  bool
		what   string
		want   string
	}{
		{report.Text, false, "audit", "n-2 OK\nn-10 MISSING driver\nn-10 MISSING dcgm-exporter\n"},
		{report.Text, true, "audit", "n-2 OK\nn-10 MISSING driver\nn-10 MISSING dcgm-exporter\n"},
		{report.Text, false, "matrix", "n-2 driver=yes device-plugin=no\nn-10 driver=no device-plugin=yes\nTOTAL_PODS=2\n"},
		{report.Text, false, "finding", "device-plugin-without-toolkit\n"},
		{report.Text, false, "healthy", "ok\n"},
		{report.Table, false, "audit", "" +
			"NODE   STATUS    MISSING\n" +
			"n-2    OK\n" +
			"n-10   MISSING   driver,dcgm-exporter\n"},
		{report.Table, true, "audit", "" +
			"NODE   STATUS    MISSING\n" +
			"n-2    \x1b[32mOK\x1b[0m\n" +
			"n-10   \x1b[31mMISSING\x1b[0m   driver,dcgm-exporter\n"},
		{report.Table, false, "matrix", "" +
			"NODE   DRIVER   DEVICE-PLUGIN\n" +
			"n-2    yes      no\n" +
			"n-10   no       yes\n" +
			"\nRunning DaemonSet pods in the namespace: 2\n"},
		{report.Table, true, "matrix", "" +
			"NODE   DRIVER   DEVICE-PLUGIN\n" +
			"n-2    \x1b[32myes\x1b[0m      \x1b[2mno\x1b[0m\n" +
			"n-10   \x1b[2mno\x1b[0m       \x1b[32myes\x1b[0m\n" +
			"\nRunning DaemonSet pods in the namespace: 2\n"},
		{report.Table, false, "finding", "NODE   VERDICT\nn-10   device-plugin-without-toolkit\n"},
		{report.Table, true, "healthy", "NODE   VERDICT\nn-2    \x1b[32mok\x1b[0m\n"},
	} {
		t.Run(string(tc.format)+"/"+tc.what, func(t *testing.T) {
			got := render(t, report.Printer{Format: tc.format, Color: tc.color}, tc.what)
			if got != tc.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	p := report.Printer{Format: report.JSON, Color: true}
	for what, want := range map[string]string{
		"audit":   `{"ok":false,"nodes":[{"node":"n-2","missing":[]},{"node":"n-10","missing":["driver","dcgm-exporter"]}]}`,
		"matrix":  `{"columns":["driver","device-plugin"],"rows":[{"node":"n-2","present":{"device-plugin":false,"driver":true}},{"node":"n-10","present":{"device-plugin":true,"driver":false}}],"totalPods":2}`,
		"finding": `{"node":"n-10","findings":["device-plugin-without-toolkit"],"ok":false,"verdict":"device-plugin-without-toolkit"}`,
		"healthy": `{"node":"n-2","findings":[],"ok":true,"verdict":"ok"}`,
	} {
		got := render(t, p, what)
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(got)); err != nil {
			t.Fatalf("%s: invalid JSON %q: %v", what, got, err)
		}
		if compact.String() != want {
			t.Errorf("%s:\n%s\nwant:\n%s", what, compact.String(), want)
		}
		if strings.Contains(got, "\x1b") {
			t.Errorf("%s: colour codes in JSON", what)
		}
	}
}

func TestJSONEmpty(t *testing.T) {
	var b bytes.Buffer
	p := report.Printer{Format: report.JSON}
	if err := p.Result(&b, io.Discard, audited(nil, nil), report.AuditView); err != nil {
		t.Fatal(err)
	}
	if err := p.Result(&b, io.Discard, tabulated(judge.Matrix{Columns: []string{"driver"}}), report.MatrixView); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "null") {
		t.Errorf("empty lists must print as []:\n%s", b.String())
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"text", "json", "yaml", "table"} {
		if f, err := report.ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "YAML", "JSON", "wide"} {
		if _, err := report.ParseFormat(s); err == nil {
			t.Errorf("ParseFormat(%q) accepted", s)
		}
	}
}

// The commands without a table, and version, accept exactly their formats
// and name them in the error.
func TestParseFormatOf(t *testing.T) {
	noTable := []report.Format{report.Text, report.JSON, report.YAML}
	for _, tc := range []struct {
		s       string
		allowed []report.Format
		want    string
	}{
		{"table", noTable, `unknown output format "table" (want text, json, yaml)`},
		{"xml", noTable, `unknown output format "xml" (want text, json, yaml)`},
		{"text", []report.Format{report.JSON, report.YAML}, `unknown output format "text" (want json or yaml)`},
	} {
		if _, err := report.ParseFormatOf(tc.s, tc.allowed...); err == nil || err.Error() != tc.want {
			t.Errorf("ParseFormatOf(%q, %v) = %v; want %s", tc.s, tc.allowed, err, tc.want)
		}
	}
	if f, err := report.ParseFormatOf("yaml", noTable...); err != nil || f != report.YAML {
		t.Errorf("ParseFormatOf(yaml) = %q, %v", f, err)
	}
}

func TestNoColorOffTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("NO_COLOR", "")
	if report.ColorFor(f) {
		t.Error("a regular file is no terminal: no colour")
	}
	if report.ColorFor(&bytes.Buffer{}) {
		t.Error("a buffer is no terminal: no colour")
	}
}

// openPTY opens a pseudo-terminal and returns its terminal end.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal on this machine: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

func TestColorOnTerminal(t *testing.T) {
	tty := openPTY(t)
	t.Setenv("NO_COLOR", "")
	if !report.ColorFor(tty) {
		t.Error("a terminal without NO_COLOR gets colour")
	}
	t.Setenv("NO_COLOR", "1")
	if report.ColorFor(tty) {
		t.Error("NO_COLOR=1 on a terminal: no colour")
	}
}

// YAML is the JSON value, written as YAML: a program gets the same fields
// from either.
func TestYAMLIsTheJSONValue(t *testing.T) {
	for _, what := range []string{"audit", "matrix", "finding", "healthy"} {
		j := render(t, report.Printer{Format: report.JSON}, what)
		y := render(t, report.Printer{Format: report.YAML}, what)
		fromYAML, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatalf("%s: invalid YAML %q: %v", what, y, err)
		}
		var a, b any
		if err := json.Unmarshal([]byte(j), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(fromYAML, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: YAML says %v, JSON %v", what, b, a)
		}
		if strings.HasPrefix(y, "{") {
			t.Errorf("%s: YAML output is JSON: %q", what, y)
		}
	}
}
