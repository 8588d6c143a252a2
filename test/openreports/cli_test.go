package openreports_test

import (
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/openreports"
)

// junitCases are the test cases of a gpuops -o junit run, as checks.
func junitCases(t *testing.T, policy, out string) []check {
	t.Helper()
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name      string    `xml:"name,attr"`
				Classname string    `xml:"classname,attr"`
				Failure   *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil || len(doc.Suites) != 1 {
		t.Fatalf("-o junit: %v\n%s", err, out)
	}
	var cs []check
	for _, c := range doc.Suites[0].Cases {
		res := "pass"
		if c.Failure != nil {
			res = "fail"
		}
		cs = append(cs, check{policy, c.Classname, c.Name, res})
	}
	return cs
}

// verdicts are the checks audit and order-check make of the fleet, one by
// one, read from their own outputs: audit -o junit's cases (an operand
// asked for, pass or MISSING; a STUCK pause), audit -o json's warnings and
// unexpected pods (warn), and for each node order-check NODE -o junit's
// rules; audit -o json's and order-check -o json's findings are checked to
// be the failures among them.
func (f *fleet) verdicts(t *testing.T, allRules bool) []check {
	t.Helper()
	r := f.gpuops(t, "audit", "-o", "junit")
	want := junitCases(t, openreports.Audit, r.Stdout)
	r = f.gpuops(t, "audit", "-o", "json")
	var audit struct {
		Nodes []struct {
			Node           string
			Missing, Stuck []string
		}
		Warnings []struct {
			Node, Operand, Label string
			Stuck                bool
		}
		Unexpected []struct{ Node, Operand string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &audit); err != nil {
		t.Fatalf("audit -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	var failed []check
	for _, n := range audit.Nodes {
		for _, op := range slices.Concat(n.Missing, n.Stuck) {
			failed = append(failed, check{openreports.Audit, n.Node, op, "fail"})
		}
	}
	if (r.Code == 1) != (len(failed) > 0) {
		t.Errorf("audit -o json: exit %d with %d findings", r.Code, len(failed))
	}
	if got := only(want, "fail"); !sameChecks(got, failed) {
		t.Errorf("audit -o junit fails %v, audit -o json %v", got, failed)
	}
	for _, w := range audit.Warnings {
		if !w.Stuck {
			rule := w.Operand
			if rule == "" {
				rule = w.Label
			}
			want = append(want, check{openreports.Audit, w.Node, rule, "warn"})
		}
	}
	for _, u := range audit.Unexpected {
		want = append(want, check{openreports.Audit, u.Node, u.Operand, "warn"})
	}
	for _, n := range audit.Nodes {
		args := []string{}
		if allRules {
			args = append(args, "--all-rules")
		}
		r := f.order1(t, n.Node, append(args, "-o", "junit")...)
		cases := junitCases(t, openreports.Order, r.Stdout)
		r = f.order1(t, n.Node, append(args, "-o", "json")...)
		var v struct{ Findings []string }
		if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
			t.Fatalf("order-check %s -o json: %v\n%s", n.Node, err, r.Stdout)
		}
		var findings []check
		for _, fd := range v.Findings {
			findings = append(findings, check{openreports.Order, n.Node, fd, "fail"})
		}
		if got := only(cases, "fail"); !sameChecks(got, findings) {
			t.Errorf("order-check %s: -o junit fails %v, -o json %v", n.Node, got, findings)
		}
		want = append(want, cases...)
	}
	slices.SortFunc(want, func(a, b check) int { return strings.Compare(a.String(), b.String()) })
	return want
}

func only(cs []check, result string) []check {
	return slices.DeleteFunc(slices.Clone(cs), func(c check) bool { return c.result != result })
}

func sameChecks(a, b []check) bool {
	key := func(c check) string { return c.String() }
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		as[i] = key(a[i])
	}
	for i := range b {
		bs[i] = key(b[i])
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// list parses -o openreports' output.
func list(t *testing.T, out string) []v1alpha1.ClusterReport {
	t.Helper()
	var l struct {
		APIVersion, Kind string
		Items            []v1alpha1.ClusterReport
	}
	if err := yaml.Unmarshal([]byte(out), &l); err != nil || l.APIVersion != "v1" || l.Kind != "List" {
		t.Fatalf("-o openreports is not a v1 List: %v\n%s", err, out)
	}
	return l.Items
}

// TestOutputAppliesAndMatchesTheVerdicts: gpuops audit -o openreports |
// kubectl apply -f - works on a cluster with findings; the report the
// server then holds passed the CRD's schema (which refuses a bad result)
// and its results are audit's and order-check's verdicts one for one, with
// a correct summary. order-check NODE's report is that node's; health's
// and upgrades' apply too.
func TestOutputAppliesAndMatchesTheVerdicts(t *testing.T) {
	f := newFleet(t)
	want := f.verdicts(t, false)
	if len(only(want, "fail")) < 2 || len(only(want, "warn")) < 2 || len(only(want, "pass")) < 4 {
		t.Fatalf("the fleet has too few findings to test with: %v", want)
	}

	r := f.gpuops(t, "audit", "-o", "openreports")
	if r.Code != 1 || r.Stderr != "" {
		t.Fatalf("audit -o openreports: exit %d, want 1 (findings); stderr %q", r.Code, r.Stderr)
	}
	items := list(t, r.Stdout)
	if len(items) != 1 || items[0].Name != "gpuops" || items[0].Kind != "ClusterReport" || items[0].APIVersion != "openreports.io/v1alpha1" {
		t.Fatalf("audit -o openreports: %d items, want the one ClusterReport gpuops:\n%s", len(items), r.Stdout)
	}
	file := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "audit.yaml"), r.Stdout)
	f.env.Kubectl(t, "apply", "-f", file) // as the README says: | kubectl apply -f -
	f.env.Kubectl(t, "apply", "--server-side", "-f", file)
	got, err := f.get(t, "gpuops")
	if err != nil {
		t.Fatal(err)
	}
	if g := checksOf(got.Results, openreports.Audit, openreports.Order); !slices.Equal(g, want) {
		t.Errorf("the report's results are\n%v\nwant audit's and order-check's verdicts\n%v", g, want)
	}
	if got.Summary != openreports.Summarize(got.Results) || got.Summary.Fail != len(only(want, "fail")) || got.Summary.Warn != len(only(want, "warn")) {
		t.Errorf("summary %+v, want %d fail and %d warn", got.Summary, len(only(want, "fail")), len(only(want, "warn")))
	}
	if got.Labels["app.kubernetes.io/managed-by"] != "gpuops" || got.Source != "gpuops" {
		t.Errorf("the report's labels %v, source %q", got.Labels, got.Source)
	}

	// The schema is the CRD's for real: a result it does not know is refused.
	bad := strings.Replace(r.Stdout, "result: fail", "result: broken", 1)
	applied := gpuopstest.On(f.env).Kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "bad.yaml"), bad))
	if applied.Code == 0 || !strings.Contains(applied.Stderr, "Unsupported value") {
		t.Errorf("a report with result: broken applies: exit %d\n%s", applied.Code, applied.Stderr)
	}

	// order-check NODE: that node's report, its audit and order checks.
	r = f.order1(t, f.order, "-o", "openreports")
	items = list(t, r.Stdout)
	if r.Code != 1 || len(items) != 1 || items[0].Name != "gpuops-"+f.order || items[0].Scope == nil || items[0].Scope.Name != f.order {
		t.Fatalf("order-check %s -o openreports: exit %d, %d items\n%s", f.order, r.Code, len(items), r.Stdout)
	}
	f.env.Kubectl(t, "apply", "--server-side", "-f", gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "order.yaml"), r.Stdout))
	var mine []check
	for _, c := range want {
		if c.node == f.order {
			mine = append(mine, c)
		}
	}
	if g := checksOf(items[0].Results, openreports.Audit, openreports.Order); !slices.Equal(g, mine) {
		t.Errorf("order-check %s's report: %v, want %v", f.order, g, mine)
	}
	if r := f.order1(t, f.env.NodeName("absent"), "-o", "openreports"); r.Code != 2 || r.Stdout != "" {
		t.Errorf("order-check of an absent node -o openreports: exit %d, stdout %q; want 2 and nothing", r.Code, r.Stdout)
	}

	// --contexts: one List of every cluster's reports, apart by name and
	// label though they judge the same nodes; two contexts of the one
	// cluster here, one of them a name no object could have.
	contexts := f.twoContexts(t, "lab-a", "arn:aws:eks:eu-west-1:123456789012:cluster/gpu_train")
	r = gpuopstest.Cluster{Kubeconfig: contexts, Namespace: ns}.Run(t, "audit", "--contexts", "lab-a,arn:aws:eks:eu-west-1:123456789012:cluster/gpu_train",
		"--discover", "-l", testcluster.LabelTestID+"="+f.env.ID, "-o", "openreports")
	items = list(t, r.Stdout)
	if r.Code != 1 || len(items) != 2 || items[0].Name == items[1].Name {
		t.Fatalf("audit --contexts -o openreports: exit %d, %d items\n%s%s", r.Code, len(items), r.Stdout, r.Stderr)
	}
	f.env.Kubectl(t, "apply", "--server-side", "-f", gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "contexts.yaml"), r.Stdout))
	for _, it := range items {
		got, err := f.get(t, it.Name)
		if err != nil {
			t.Fatal(err)
		}
		if g := checksOf(got.Results, openreports.Audit, openreports.Order); !slices.Equal(g, want) || got.Annotations[openreports.ClusterAnnotation] == "" {
			t.Errorf("%s (context %q): %v, want %v", got.Name, got.Annotations[openreports.ClusterAnnotation], g, want)
		}
	}

	// health and upgrades: their own checks, and the audit's and order's.
	for _, cmd := range []string{"health", "upgrades"} {
		r := f.gpuops(t, cmd, "-o", "openreports")
		items := list(t, r.Stdout)
		if len(items) != 1 || items[0].Name != "gpuops" {
			t.Fatalf("%s -o openreports: exit %d, %d items\n%s%s", cmd, r.Code, len(items), r.Stdout, r.Stderr)
		}
		f.env.Kubectl(t, "apply", "--server-side", "-f", gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), cmd+".yaml"), r.Stdout))
		policy := map[string]string{"health": openreports.Health, "upgrades": openreports.Upgrade}[cmd]
		if g := checksOf(items[0].Results, openreports.Audit, openreports.Order); !slices.Equal(g, want) {
			t.Errorf("%s -o openreports: audit and order %v, want %v", cmd, g, want)
		}
		if cmd == "health" && len(checksOf(items[0].Results, policy)) != 4 {
			t.Errorf("health -o openreports: %v, want one check of each of the 4 GPU nodes", checksOf(items[0].Results, policy))
		}
	}
}
