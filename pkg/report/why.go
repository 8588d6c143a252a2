package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/openreports"

	"github.com/gpuops/gpuops/pkg/workload"
)

// Why prints gpuops why: per GPU pod of the target a headline "<ns>/<pod>
// <STATE> <code> <why>" (no code while it runs or waits as asked), then,
// indented, each GPU node that does not take it and why, and the
// scheduler's or the kubelet's own words; per other pod of the target why
// it is no GPU pod. Notes go to notes, in text alone.
func (p Printer) Why(w, notes io.Writer, r *workload.WhyReport) error {
	if p.Format.Data() {
		return p.data(w, r)
	}
	if err := writeNotes(notes, r.Notes); err != nil {
		return err
	}
	var lines []string
	for _, a := range r.Answers {
		lines = append(lines, headline(a))
		lines = append(lines, details(a, "  ")...)
	}
	for _, o := range r.Others {
		lines = append(lines, o.Pod+" "+o.Why)
	}
	return writeLines(w, lines)
}

// details are an answer's lines below its headline, each indented: each
// GPU node that does not take the pod and why, then the scheduler's or the
// kubelet's own words.
func details(a workload.Answer, indent string) []string {
	var lines []string
	for _, n := range a.Nodes {
		for _, why := range n.Reasons {
			lines = append(lines, fmt.Sprintf("%s%s %s: %s", indent, n.Node, why.Code, why.Message))
		}
	}
	if a.Said != "" {
		lines = append(lines, indent+"said: "+a.Said)
	}
	return lines
}

// Pods prints gpuops pods: per cause a line "<code>: <n>" (waiting: the
// pods Pending for less than --stuck-after), then each of its pods'
// headlines, indented; "no GPU pod stuck" when there is none. JUnit has a
// test case per GPU pod judged (its namespace the classname), failed when
// it is stuck, with its code as the failure's type and its details as the
// text; OpenReports a result per GPU pod (pkg/openreports, policy pods).
func (p Printer) Pods(w, notes io.Writer, r *workload.PodsReport) error {
	switch {
	case p.Format.Data():
		return p.data(w, r)
	case p.Format == JUnit:
		return writeJUnit(w, podsJUnit, suite(podsJUnit, podCases(r)))
	case p.Format == OpenReports:
		return PrintReports(w, openreports.PodReports(openreports.PodResults(r.Pods, r.Running, r.Taken), "", openreports.MaxBytes))
	}
	if err := writeNotes(notes, r.Notes); err != nil {
		return err
	}
	var lines []string
	for i := 0; i < len(r.Pods); {
		code := r.Pods[i].Code
		j := i
		for j < len(r.Pods) && r.Pods[j].Code == code {
			j++
		}
		lines = append(lines, fmt.Sprintf("%s: %d", code, j-i))
		for _, a := range r.Pods[i:j] {
			lines = append(lines, "  "+headline(a))
		}
		i = j
	}
	if len(r.Pods) == 0 {
		lines = append(lines, "no GPU pod stuck")
	}
	return writeLines(w, lines)
}

// podsJUnit names gpuops pods' JUnit document and its one suite.
const podsJUnit = "gpuops pods"

// podCases are gpuops pods' JUnit cases: each pod listed (a failure when it
// is a finding), then each GPU pod running as asked.
func podCases(r *workload.PodsReport) []junitCase {
	out := make([]junitCase, 0, len(r.Pods)+len(r.Running))
	for _, a := range r.Pods {
		ns, _, _ := strings.Cut(a.Pod, "/")
		c := junitCase{Name: a.Pod, Classname: ns, Time: noTime}
		if a.Finding() {
			c.Failure = &junitFailure{Type: a.Code, Message: strings.TrimPrefix(headline(a), a.Pod+" "), Text: strings.Join(details(a, ""), "\n")}
		}
		out = append(out, c)
	}
	for _, pod := range r.Running {
		ns, _, _ := strings.Cut(pod, "/")
		out = append(out, junitCase{Name: pod, Classname: ns, Time: noTime})
	}
	return out
}

// headline is an answer's first line: "<ns>/<pod> <STATE> [<code>] <why>".
func headline(a workload.Answer) string {
	head := a.Pod + " " + a.State
	if a.Code != "" {
		head += " " + a.Code
	}
	return head + " " + a.Message
}
