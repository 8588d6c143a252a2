package report

import (
	"encoding/xml"
	"io"
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, the GitHub Actions
// reporters), in the shape of the Ant/Jenkins junit-10 schema: one suite per
// command, one test case per check (node × operand asked for, or node ×
// start-up rule), and one failure per finding with its reason. The case's
// classname is the node, so CI tools group the checks node by node.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Hostname string      `xml:"hostname,attr,omitempty"` // the API server, when a run judges many clusters
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"` // a cluster that could not be judged
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// noTime is every time attribute: a judge reads one snapshot and measures
// nothing per check, but some readers want the attribute.
const noTime = "0"

// writeJUnit writes the cases as one suite of the command's name.
func writeJUnit(w io.Writer, command string, cases []junitCase) error {
	name := "gpuops " + command
	failures := 0
	for _, c := range cases {
		if c.Failure != nil {
			failures++
		}
	}
	return writeSuites(w, junitSuites{Name: name, Tests: len(cases), Failures: failures, Time: noTime, Suites: []junitSuite{{
		Name: name, Tests: len(cases), Failures: failures, Time: noTime, Cases: nonNil(cases),
	}}})
}

// writeSuites writes a JUnit document.
func writeSuites(w io.Writer, doc junitSuites) error {
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, xml.Header+string(b)+"\n")
	return err
}

// auditJUnit has one case per node and operand it asks for, a MISSING one
// failing with its reasons, one per line; and a failing case per operand a
// helper has paused there past --stuck-after.
func auditJUnit(w io.Writer, audits []judge.NodeAudit, x whyIndex) error {
	var cases []junitCase
	for _, a := range audits {
		for _, op := range a.Asked {
			c := junitCase{Name: op, Classname: a.Node, Time: noTime}
			if slices.Contains(a.Missing, op) {
				c.Failure = &junitFailure{Type: "missing", Message: "MISSING " + op, Text: strings.Join(x.reasons(a.Node, op), "\n")}
			}
			cases = append(cases, c)
		}
		for _, op := range a.Stuck {
			cases = append(cases, junitCase{Name: op, Classname: a.Node, Time: noTime,
				Failure: &junitFailure{Type: "stuck", Message: "STUCK " + op, Text: x.stuck[[2]string{a.Node, op}]}})
		}
	}
	return writeJUnit(w, "audit", cases)
}

// orderJUnit has one case per rule judged on the node; a broken one fails
// saying what runs without what.
func orderJUnit(w io.Writer, v judge.OrderVerdict) error {
	var cases []junitCase
	for _, r := range v.Rules {
		c := junitCase{Name: r.Finding, Classname: v.Node, Time: noTime}
		if slices.Contains(v.Findings, r.Finding) {
			c.Failure = &junitFailure{Type: "order", Message: r.Finding, Text: explain.Order(r).Message}
		}
		cases = append(cases, c)
	}
	return writeJUnit(w, "order-check", cases)
}
