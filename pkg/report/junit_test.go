package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
)

// junitDoc is what a CI system reads of a JUnit file.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, b []byte) junitDoc {
	t.Helper()
	var d junitDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b)
	}
	return d
}

// validateJUnit checks a JUnit document against testdata/junit.xsd with
// xmllint (Debian's libxml2-utils; `go tool task deps` installs it).
func validateJUnit(t *testing.T, doc []byte) error {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint is needed to check JUnit output against its schema: apt-get install -y libxml2-utils (or go tool task deps)")
	}
	f := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(f, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit.xsd"), f).CombinedOutput()
	if err != nil {
		return &schemaError{string(out)}
	}
	return nil
}

type schemaError struct{ out string }

func (e *schemaError) Error() string { return e.out }

func TestAuditJUnit(t *testing.T) {
	audits := []judge.NodeAudit{
		{Node: "n-2", Asked: []string{"driver"}, Missing: []string{}},
		{Node: "n-3", Missing: []string{}}, // asks for nothing: no case
		{Node: "n-10", Asked: []string{"driver", "device-plugin", "dcgm-exporter"}, Missing: []string{"driver", "dcgm-exporter"}},
	}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JUnit}).Result(&b, io.Discard, audited(audits, &why), report.AuditView); err != nil {
		t.Fatal(err)
	}
	if err := validateJUnit(t, b.Bytes()); err != nil {
		t.Fatalf("invalid JUnit: %v\n%s", err, b.String())
	}
	d := parseJUnit(t, b.Bytes())
	if d.Tests != 4 || d.Failures != 2 || len(d.Suites) != 1 || d.Suites[0].Name != "gpuops audit" || d.Suites[0].Tests != 4 || d.Suites[0].Failures != 2 {
		t.Fatalf("counts: %+v", d)
	}
	var got []string
	for _, c := range d.Suites[0].Cases {
		s := c.Classname + "/" + c.Name
		if c.Failure != nil {
			s += " " + c.Failure.Type + ": " + c.Failure.Message + ": " + c.Failure.Text
		}
		got = append(got, s)
	}
	want := []string{
		"n-2/driver",
		"n-10/driver missing: MISSING driver: node is cordoned\nno pod yet",
		"n-10/device-plugin",
		"n-10/dcgm-exporter missing: MISSING dcgm-exporter: no DaemonSet",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("cases:\n%q\nwant:\n%q", got, want)
	}
}

func TestOrderJUnit(t *testing.T) {
	rules := operand.RulesFor(operand.Lab, operand.AllRules)
	v := judge.NodeOrder{Node: "n-10", Findings: []string{"device-plugin-without-toolkit"}, Rules: rules}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JUnit}).Result(&b, io.Discard, ordered(v), report.OrderView); err != nil {
		t.Fatal(err)
	}
	if err := validateJUnit(t, b.Bytes()); err != nil {
		t.Fatalf("invalid JUnit: %v\n%s", err, b.String())
	}
	d := parseJUnit(t, b.Bytes())
	if d.Tests != len(rules) || d.Failures != 1 || d.Suites[0].Name != "gpuops order-check" {
		t.Fatalf("counts: %+v", d)
	}
	c := d.Suites[0].Cases[0]
	if c.Classname != "n-10" || c.Name != "device-plugin-without-toolkit" || c.Failure == nil ||
		c.Failure.Text != "a device-plugin pod runs here and no container-toolkit pod does" {
		t.Errorf("first case: %+v", c)
	}
	for _, c := range d.Suites[0].Cases[1:] {
		if c.Failure != nil {
			t.Errorf("%s fails: %+v", c.Name, c.Failure)
		}
	}
}

// The schema check is real: a document that breaks the schema is refused.
func TestJUnitSchemaRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"count not a number": `<testsuites><testsuite name="s" tests="many" failures="0" errors="0"/></testsuites>`,
		"suite without name": `<testsuites><testsuite tests="1" failures="0" errors="0"><testcase name="c"/></testsuite></testsuites>`,
		"case without name":  `<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase classname="c"/></testsuite></testsuites>`,
		"unknown element":    `<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><check name="c"/></testsuite></testsuites>`,
	} {
		if err := validateJUnit(t, []byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := `<testsuites><testsuite name="s" tests="1" failures="1" errors="0"><testcase name="c"><failure message="m" type="t">why</failure></testcase></testsuite></testsuites>`
	if err := validateJUnit(t, []byte(ok)); err != nil {
		t.Errorf("a valid document is refused: %v", err)
	}
}

func TestJUnitOnlyWhereAsked(t *testing.T) {
	if _, err := report.ParseFormat("junit"); err == nil {
		t.Error("junit is not a format of every judge")
	}
	if f, err := report.ParseFormat("junit", report.JUnit); err != nil || f != report.JUnit {
		t.Errorf("ParseFormat(junit, JUnit) = %q, %v", f, err)
	}
}

// A helper's pause past --stuck-after is a failing case of its own, with
// the pause's message; the paused operand is not asked for, so it has no
// other case.
func TestAuditJUnitStuck(t *testing.T) {
	audits := []judge.NodeAudit{{Node: "n-1", Asked: []string{"driver"}, Missing: []string{}, Stuck: []string{"device-plugin"}}}
	x := explain.Report{Warnings: []explain.Warning{{Node: "n-1", Operand: "device-plugin", Stuck: true, Message: "paused by mig-manager 2h ago"}}}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.JUnit}).Result(&b, io.Discard, audited(audits, &x), report.AuditView); err != nil {
		t.Fatal(err)
	}
	if err := validateJUnit(t, b.Bytes()); err != nil {
		t.Fatalf("invalid JUnit: %v\n%s", err, b.String())
	}
	d := parseJUnit(t, b.Bytes())
	if d.Tests != 2 || d.Failures != 1 {
		t.Fatalf("counts: %+v", d)
	}
	c := d.Suites[0].Cases[1]
	if c.Name != "device-plugin" || c.Failure == nil || c.Failure.Type != "stuck" || c.Failure.Message != "STUCK device-plugin" || c.Failure.Text != "paused by mig-manager 2h ago" {
		t.Errorf("stuck case %+v", c)
	}
}
