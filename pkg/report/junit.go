package report

import (
	"encoding/xml"
	"io"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, the GitHub Actions
// reporters), in the shape of the Ant/Jenkins junit-10 schema: one suite per
// command (per cluster in a run across clusters), one test case per check
// (node × operand asked for, node × start-up rule, GPU node usable), and
// one failure per finding with its reason. The case's classname is the
// node, so CI tools group the checks node by node. The views make the
// cases (auditView.cases, …); this file makes the document.

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

// junitName names the document of a view's command, and its suite when
// one cluster is judged.
func junitName(view View) string { return "gpuops " + commands[view] }

// suite is a suite of the cases.
func suite(name string, cases []junitCase) junitSuite {
	failures := 0
	for _, c := range cases {
		if c.Failure != nil {
			failures++
		}
	}
	return junitSuite{Name: name, Tests: len(cases), Failures: failures, Time: noTime, Cases: nonNil(cases)}
}

// writeSuites writes the JUnit document of the view's command: the suites
// and their totals.
func writeSuites(w io.Writer, view View, suites ...junitSuite) error {
	return writeJUnit(w, junitName(view), suites...)
}

// writeJUnit writes the JUnit document named name: the suites and their
// totals.
func writeJUnit(w io.Writer, name string, suites ...junitSuite) error {
	doc := junitSuites{Name: name, Time: noTime, Suites: suites}
	for _, s := range suites {
		doc.Tests, doc.Failures, doc.Errors = doc.Tests+s.Tests, doc.Failures+s.Failures, doc.Errors+s.Errors
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, xml.Header+string(b)+"\n")
	return err
}
