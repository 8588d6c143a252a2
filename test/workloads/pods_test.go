package workloads_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/workload"
)

// TestPodsAgreesWithWhy: gpuops pods lists the namespace's stuck GPU pods
// grouped by cause, each as gpuops why answers it; -l narrows them,
// --stuck-after makes them waiting (exit 0), a malformed -l is exit 2.
func TestPodsAgreesWithWhy(t *testing.T) {
	env := testcluster.New(t)
	n := fullNode(t, env)
	big := pod("asks-16", "", gpu, 16)
	big.Labels = map[string]string{"team": "b"}
	create(t, env, env.Namespace, pod("asks-2", "", gpu, 2), big)
	env.Unscheduled(t, "asks-2")
	env.Unscheduled(t, "asks-16")

	c := gpuopstest.On(env)
	list := func(code int, args ...string) workload.PodsReport {
		t.Helper()
		r := c.Want(t, code, append([]string{"pods", "-o", "json"}, args...)...)
		var got workload.PodsReport
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("pods -o json %v: %v\n%s", args, err, r.Stdout)
		}
		return got
	}
	got := list(1, "--stuck-after", "1ns")
	var codes []string
	for _, a := range got.Pods {
		codes = append(codes, a.Pod+" "+a.Code)
		if w := why(t, env, strings.TrimPrefix(a.Pod, env.Namespace+"/")); !reflect.DeepEqual(w, a) {
			t.Errorf("pods says %+v\nwhy says %+v", a, w)
		}
	}
	ns := env.Namespace + "/"
	if want := []string{ns + "asks-2 " + workload.AllAllocated, ns + "asks-16 " + workload.ExceedsNode}; !reflect.DeepEqual(codes, want) {
		t.Errorf("pods: %q, want %q", codes, want)
	}
	if got := list(1, "--stuck-after", "1ns", "-l", "team=b"); len(got.Pods) != 1 || got.Pods[0].Pod != ns+"asks-16" {
		t.Errorf("pods -l team=b: %+v", got.Pods)
	}
	if got := list(0, "--stuck-after", "1h"); len(got.Pods) != 2 || got.Pods[0].State != workload.Waiting {
		t.Errorf("pods --stuck-after 1h: %+v, want both Waiting", got.Pods)
	}
	r := c.Want(t, 1, "pods", "--stuck-after", "1ns")
	if !strings.HasPrefix(r.Stdout, "all-allocated: 1\n  "+ns+"asks-2 Pending all-allocated "+n+": 8 of its 8 nvidia.com/gpu held by 1 pod(s): 1 in "+env.Namespace+": 0 free, asks 2\nexceeds-node: 1\n") {
		t.Errorf("pods:\n%s", r.Stdout)
	}
	c.WantError(t, "--selector", "pods", "-l", "a in (")
	c.WantError(t, "--stuck-after", "pods", "--stuck-after", "-1s")
}

// TestPodsJUnitAndOpenReports: gpuops pods -o junit and -o openreports, as
// every judge prints them: a check per GPU pod, failed where pods says it
// is stuck. The JUnit passes the schema (xmllint); the reports apply to a
// real API server with the ClusterReport CRD of the reports-api go.mod
// pins, which refuses what its schema does not allow.
func TestPodsJUnitAndOpenReports(t *testing.T) {
	env := testcluster.New(t)
	n := fullNode(t, env)
	create(t, env, env.Namespace, pod("asks-2", "", gpu, 2))
	env.Unscheduled(t, "asks-2")
	c := gpuopstest.On(env)
	ns := env.Namespace + "/"

	r := c.Want(t, 1, "pods", "--stuck-after", "1ns", "-o", "junit")
	gpuopstest.ValidJUnit(t, filepath.Join("..", ".."), r.Stdout)
	var doc struct {
		Name   string `xml:"name,attr"`
		Suites []struct {
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Failure   *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Name != "gpuops pods" || len(doc.Suites) != 1 {
		t.Fatalf("pods -o junit: %v\n%s", err, r.Stdout)
	}
	var cases []string
	for _, tc := range doc.Suites[0].Cases {
		line := tc.Classname + " " + tc.Name
		if tc.Failure != nil {
			line += " " + tc.Failure.Type + ": " + tc.Failure.Message
		}
		cases = append(cases, line)
	}
	want := []string{env.Namespace + " " + ns + "asks-2 " + workload.AllAllocated + ": Pending all-allocated " + n + ": 8 of its 8 nvidia.com/gpu held by 1 pod(s): 1 in " +
		env.Namespace + ": 0 free, asks 2", env.Namespace + " " + ns + "holder"}
	if !reflect.DeepEqual(cases, want) {
		t.Errorf("pods -o junit cases:\n%q\nwant\n%q", cases, want)
	}

	r = c.Want(t, 1, "pods", "--stuck-after", "1ns", "-o", "openreports")
	var l struct {
		APIVersion, Kind string
		Items            []v1alpha1.ClusterReport
	}
	if err := yaml.Unmarshal([]byte(r.Stdout), &l); err != nil || l.Kind != "List" || len(l.Items) != 1 || l.Items[0].Name != "gpuops-pods" {
		t.Fatalf("pods -o openreports: %v, want a List of the one ClusterReport gpuops-pods\n%s", err, r.Stdout)
	}
	var results []string
	for _, res := range l.Items[0].Results {
		var subjects []string
		for _, s := range res.Subjects {
			subjects = append(subjects, s.Kind+"/"+s.Namespace+"/"+s.Name)
		}
		results = append(results, fmt.Sprintf("%s/%s %s %s %s %v", res.Policy, res.Rule, res.Result, res.Severity, res.Properties["code"], subjects))
	}
	want = []string{
		fmt.Sprintf("pods/running fail low all-allocated [Pod/%s/asks-2]", env.Namespace),
		fmt.Sprintf("pods/running pass low  [Pod/%s/holder]", env.Namespace),
	}
	if !reflect.DeepEqual(results, want) || l.Items[0].Summary.Fail != 1 || l.Items[0].Summary.Pass != 1 {
		t.Errorf("pods -o openreports results:\n%q (summary %+v)\nwant\n%q", results, l.Items[0].Summary, want)
	}
	crd, _, err := testcluster.ClusterReportCRD(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	env.Kubectl(t, "apply", "--server-side", "-f", crd)
	env.Kubectl(t, "wait", "--for=condition=Established", "crd/clusterreports.openreports.io")
	file := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "pods.yaml"), r.Stdout)
	env.Kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", file)
	bad := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "bad.yaml"), strings.Replace(r.Stdout, "result: fail", "result: broken", 1))
	if applied := c.Kubectl(t, "apply", "--server-side", "--dry-run=server", "-f", bad); applied.Code == 0 || !strings.Contains(applied.Stderr, "Unsupported value") {
		t.Errorf("a report with result: broken applies: exit %d\n%s", applied.Code, applied.Stderr)
	}
}

// fullNode adds a node of 8 GPUs, all held by the pod holder, running
// there; it returns the node's name.
func fullNode(t *testing.T, env *testcluster.Env) string {
	t.Helper()
	n := env.NodeName("full")
	env.AddNode(t, n, nil, devices(gpu, 8, 8))
	create(t, env, env.Namespace, pod("holder", n, gpu, 8))
	runs(t, env, "holder", n)
	return n
}
