package openreports_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/openreports"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/reportsync"
)

// owned is a report as gpuops writes one, for the tests to leave behind.
func owned(name string, labels map[string]string) *v1alpha1.ClusterReport {
	l := map[string]string{operand.ManagedByLabel: openreports.ManagedBy}
	for k, v := range labels {
		l[k] = v
	}
	return &v1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Source: openreports.Source}
}

// serveLog is a serve process's stderr, line by line.
type serveLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *serveLog) read(r io.Reader) {
	s := bufio.NewScanner(r)
	for s.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, s.Text())
		l.mu.Unlock()
	}
}

func (l *serveLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// TestServeKeepsTheReports runs serve as kustomize/deploy/reports deploys
// it: its service account's rights (the base's and the component's, applied
// for real) and its arguments. It creates the report, which then holds
// what audit and order-check --all-rules say; deletes a report of its own
// that no verdict makes, and leaves another cluster's; updates the report
// when a label fixes a node and when a node goes.
func TestServeKeepsTheReports(t *testing.T) {
	f := newFleet(t)
	env := f.env
	ctx := context.Background()
	clusterReports := f.reports.OpenreportsV1alpha1().ClusterReports()

	built := env.Kubectl(t, "kustomize", "testdata/deploy")
	if !strings.Contains(built, "- --reports") || !strings.Contains(built, "name: gpuops-reports") {
		t.Fatalf("the reports component adds no --reports or no rights:\n%s", built)
	}
	env.Kubectl(t, "apply", "--server-side", "-k", "testdata/deploy")
	t.Cleanup(func() { env.Kubectl(t, "delete", "-k", "testdata/deploy", "--ignore-not-found") })
	args := deployedArgs(t, built)

	stale := owned("gpuops-"+env.NodeName("gone"), nil)
	other := owned("gpuops-other-cluster", map[string]string{openreports.ClusterLabel: "other"})
	for _, r := range []*v1alpha1.ClusterReport{stale, other} {
		if _, err := clusterReports.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	cfg := env.AccountKubeconfig(t, ns, "gpuops-judge-serve")
	cmd := gpuopstest.Cluster{Kubeconfig: cfg, Namespace: ns}.Command(t, append(args, "-l", testcluster.LabelTestID+"="+env.ID, "--listen", "127.0.0.1:0")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &serveLog{}
	go log.read(stderr)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// What serve reports is what the one-shot judges say, as serve judges:
	// every rule, the reasons, health.
	agrees := func(what string) {
		t.Helper()
		want := f.verdicts(t, true)
		poll(t, what, func() (bool, string) {
			got, err := f.get(t, "gpuops")
			if err != nil {
				return false, fmt.Sprintf("%v; serve said %q", err, log.all())
			}
			g := checksOf(got.Results, openreports.Audit, openreports.Order)
			return slices.Equal(g, want) && got.Summary == openreports.Summarize(got.Results),
				fmt.Sprintf("the report has\n%v\nwant\n%v\nserve said %q", g, want, log.all())
		})
	}
	agrees("serve creates the report")
	got, _ := f.get(t, "gpuops")
	if m := got.ManagedFields; len(m) != 1 || m[0].Manager != reportsync.FieldManager || m[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("the report's managedFields %+v, want serve's apply alone", m)
	}
	if len(checksOf(got.Results, openreports.Health)) != 4 {
		t.Errorf("the report's health checks %v, want one of each GPU node", checksOf(got.Results, openreports.Health))
	}
	// The driver rollout too, as gpuops upgrades -o openreports says it:
	// serve judges the rollout live.
	var want []check
	for _, r := range list(t, f.gpuops(t, "upgrades", "-o", "openreports").Stdout) {
		want = append(want, checksOf(r.Results, openreports.Upgrade)...)
	}
	if served := checksOf(got.Results, openreports.Upgrade); len(want) == 0 || !sameChecks(served, want) {
		t.Errorf("the report's upgrade checks %v, want %v (upgrades -o openreports)", served, want)
	}
	poll(t, "serve deletes its report no verdict makes", func() (bool, string) {
		_, err := f.get(t, stale.Name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := f.get(t, other.Name); err != nil {
		t.Errorf("another cluster's report: %v", err)
	}

	// A label fixes the broken order: the toolkit comes, and the report follows.
	env.LabelNode(t, f.order, operand.LabelPrefix+operand.ContainerToolkit, "true")
	f.asked[f.order] = append(f.asked[f.order], operand.ContainerToolkit)
	f.waitForPods(t)
	agrees("serve updates the report when a label fixes a node")
	got, _ = f.get(t, "gpuops")
	for _, c := range checksOf(got.Results, openreports.Order) {
		if c.node == f.order && c.result != "pass" {
			t.Errorf("after the fix: %v", c)
		}
	}

	// A node goes: its results go with it.
	if err := env.Client.CoreV1().Nodes().Delete(ctx, f.missing, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(f.asked, f.missing)
	agrees("serve drops a deleted node's results")
	got, _ = f.get(t, "gpuops")
	for _, r := range got.Results {
		if r.Subjects[0].Name == f.missing {
			t.Errorf("the deleted node's result is still there: %+v", r)
		}
	}
	for _, l := range log.all() {
		if strings.Contains(l, "retrying") {
			t.Errorf("serve with the component's rights: %s", l)
		}
	}
}

// deployedArgs are the serve arguments of the Deployment kustomize built,
// but the namespace (the pod's, from the downward API).
func deployedArgs(t *testing.T, built string) []string {
	t.Helper()
	var args []string
	in := false
	for _, l := range strings.Split(built, "\n") {
		switch {
		case strings.HasSuffix(strings.TrimSpace(l), "args:"):
			in = true
		case in && strings.HasPrefix(strings.TrimSpace(l), "- "):
			a := strings.TrimPrefix(strings.TrimSpace(l), "- ")
			if !strings.HasPrefix(a, "--namespace=") {
				args = append(args, a)
			}
		case in:
			in = false
		}
	}
	if len(args) == 0 || args[0] != "serve" || !slices.Contains(args, "--reports") {
		t.Fatalf("the Deployment's args %q", args)
	}
	return args
}

// TestSyncSplitsPerNode drives reportsync on the real API server with a
// size that splits the results: a report per node, scoped to it, created
// as the node is judged, updated when its label changes, deleted when the
// node goes, written back when deleted by hand; and a burst of changes is
// a handful of writes, not one each.
func TestSyncSplitsPerNode(t *testing.T) {
	f := newFleet(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := live.New(f.env.Client, live.Options{Options: pipeline.Options{Namespace: ns, NodeSelector: testcluster.LabelTestID + "=" + f.env.ID,
		Roster: pipeline.DiscoverRoster, Explain: true, Health: true}})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	var mu sync.Mutex
	reportsync.StartWith(ctx, j, f.reports.OpenreportsV1alpha1().ClusterReports(), reportsync.Options{Namespace: ns, MaxBytes: 1, Resync: 2 * time.Second,
		Failed: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx) }()

	nodeReport := func(node string, cond func(*v1alpha1.ClusterReport) bool) func() (bool, string) {
		return func() (bool, string) {
			r, err := f.get(t, openreports.Name("", node))
			if err != nil {
				return false, err.Error()
			}
			return cond(r), fmt.Sprintf("%+v", r.Results)
		}
	}
	for _, node := range []string{f.ok, f.order, f.missing, f.odd} {
		poll(t, "a report per node", nodeReport(node, func(r *v1alpha1.ClusterReport) bool {
			return r.Scope != nil && r.Scope.Kind == "Node" && r.Scope.Name == node && len(r.Results) > 0
		}))
	}
	if _, err := f.get(t, "gpuops"); !apierrors.IsNotFound(err) {
		t.Errorf("split per node, a cluster report too: %v", err)
	}

	// A burst: the odd node's driver label flips ten times, and ends "true".
	before, _ := f.get(t, openreports.Name("", f.odd))
	for i := range 10 {
		f.env.LabelNode(t, f.odd, operand.LabelPrefix+operand.Driver, []string{"false", "true"}[i%2])
	}
	f.asked[f.odd] = []string{operand.Driver}
	f.waitForPods(t)
	poll(t, "the odd node's report follows its label", nodeReport(f.odd, func(r *v1alpha1.ClusterReport) bool {
		return slices.Contains(checksOf(r.Results, openreports.Audit), check{openreports.Audit, f.odd, operand.Driver, "pass"})
	}))
	time.Sleep(2 * time.Second) // what is queued is written
	after, _ := f.get(t, openreports.Name("", f.odd))
	if n := after.Generation - before.Generation; n > 6 {
		t.Errorf("ten label changes made %d writes of the node's report", n)
	}

	okReport := openreports.Name("", f.ok)
	if err := f.reports.OpenreportsV1alpha1().ClusterReports().Delete(ctx, okReport, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "a report deleted by hand, written back at the next resync", nodeReport(f.ok, func(r *v1alpha1.ClusterReport) bool { return len(r.Results) > 0 }))

	if err := f.env.Client.CoreV1().Nodes().Delete(ctx, f.missing, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "a node gone, its report deleted", func() (bool, string) {
		_, err := f.get(t, openreports.Name("", f.missing))
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("sync errors: %v", errs)
	}
}
