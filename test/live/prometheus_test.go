package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/workload"
)

// prometheus is a real Prometheus (hack/build-tools.sh builds it from
// pinned source into .lab/bin) scraping one target every second and
// evaluating the shipped rule file every second.
type prometheus struct{ url string }

func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not on PATH: build it with hack/build-tools.sh and put .lab/bin on PATH (%v)", err)
	}
	rules, err := filepath.Abs("../../kustomize/deploy/alerts/gpuops.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: gpuops
  static_configs:
  - targets: [%q]
`, rules, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port, for Prometheus to take
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config.file", filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	})
	p := &prometheus{url: "http://" + addr}
	p.waitFor(t, "Prometheus scraping gpuops", func() bool { return p.count(t, `up{job="gpuops"} == 1`) == 1 })
	return p
}

// count is how many series the instant query returns; -1 if Prometheus
// does not answer (yet).
func (p *prometheus) count(t *testing.T, query string) int {
	t.Helper()
	var r struct{ Data struct{ Result []any } }
	if !p.get(t, "/api/v1/query?query="+url.QueryEscape(query), &r) {
		return -1
	}
	return len(r.Data.Result)
}

// get reads a JSON answer of the HTTP API into v; false if Prometheus does
// not answer (yet).
func (p *prometheus) get(t *testing.T, path string, v any) bool {
	t.Helper()
	resp, err := http.Get(p.url + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
	return true
}

type alert struct {
	Labels      map[string]string
	Annotations map[string]string
	State       string
}

func (p *prometheus) alerts(t *testing.T) []alert {
	t.Helper()
	var r struct{ Data struct{ Alerts []alert } }
	if !p.get(t, "/api/v1/alerts", &r) {
		t.Fatal("Prometheus does not answer /api/v1/alerts")
	}
	return r.Data.Alerts
}

func (p *prometheus) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Prometheus has no watch: asking again is the only way to learn.
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, patience, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("no %s within %s", what, patience)
	}
}

// find is the alert of that name whose labels include labels.
func find(alerts []alert, name string, labels map[string]string) *alert {
	for i, a := range alerts {
		match := a.Labels["alertname"] == name
		for k, v := range labels {
			match = match && a.Labels[k] == v
		}
		if match {
			return &alerts[i]
		}
	}
	return nil
}

// TestShippedAlertsOnRealPrometheus: Prometheus scrapes gpuops serve and
// evaluates the shipped rule file. A label change that leaves a device
// plugin without its toolkit makes GpuopsOrderViolation fire at once, and
// the fix resolves it; an operand kept off a node by a taint makes
// GpuopsOperandMissing and GpuopsNodeUnusable pending (they fire only after
// 15 minutes); a node the upgrade controller gave up on makes
// GpuopsDriverUpgradeFailed fire at once.
func TestShippedAlertsOnRealPrometheus(t *testing.T) {
	f := newFleet(t)
	a := f.gpuNode(t, "a")
	b := f.gpuNode(t, "b", testcluster.WithTaints(corev1.Taint{Key: "gpuops.test/broken", Effect: corev1.TaintEffectNoSchedule}))
	srv := serve(t, f.args...)
	srv.WaitFor(t, "a healthy, b missing its operands", func(m gpuopstest.Scrape) bool {
		good, _ := m.Value("gpuops_nodes", map[string]string{"state": "ok"})
		return good == 1 && m.IsOne("gpuops_operand_missing", map[string]string{"node": b, "operand": operand.Driver})
	})
	prom := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))

	violation := map[string]string{"node": a, "rule": operand.DeviceRule.Finding}
	f.env.LabelNode(t, a, toolkit.LabelKey(), "false")
	var firing *alert
	prom.waitFor(t, "GpuopsOrderViolation firing for "+a, func() bool {
		firing = find(prom.alerts(t), "GpuopsOrderViolation", violation)
		return firing != nil && firing.State == "firing"
	})
	if want := "device-plugin runs without container-toolkit on node " + a; firing.Annotations["summary"] != want {
		t.Errorf("summary %q, want %q", firing.Annotations["summary"], want)
	}
	missing := find(prom.alerts(t), "GpuopsOperandMissing", map[string]string{"node": b, "operand": operand.Driver})
	if missing == nil || missing.State != "pending" || missing.Annotations["summary"] != "driver is not running on node "+b {
		t.Errorf("GpuopsOperandMissing for %s: %+v, want pending, its summary naming node and operand", b, missing)
	}

	// The tainted node cannot run GPU work: its root cause is the driver,
	// missing, and GpuopsNodeUnusable waits its 15 minutes under that name.
	var unusable *alert
	prom.waitFor(t, "GpuopsNodeUnusable pending for "+b, func() bool {
		unusable = find(prom.alerts(t), "GpuopsNodeUnusable", map[string]string{"node": b, "code": "missing", "operand": operand.Driver})
		return unusable != nil
	})
	if want := "node " + b + " cannot run GPU work: missing driver"; unusable.State != "pending" || unusable.Annotations["summary"] != want {
		t.Errorf("GpuopsNodeUnusable for %s: %+v, want pending with summary %q", b, unusable, want)
	}

	// The upgrade controller gives up on a: its driver is the root cause,
	// and GpuopsDriverUpgradeFailed fires at once.
	f.env.LabelNode(t, a, operand.UpgradeStateLabel, operand.UpgradeFailed)
	prom.waitFor(t, "GpuopsDriverUpgradeFailed firing for "+a, func() bool {
		u := find(prom.alerts(t), "GpuopsDriverUpgradeFailed", map[string]string{"node": a, "operand": operand.Driver})
		return u != nil && u.State == "firing" && u.Annotations["summary"] == "the driver upgrade failed on node "+a
	})
	f.env.UnlabelNode(t, a, operand.UpgradeStateLabel)

	f.env.LabelNode(t, a, toolkit.LabelKey(), "true")
	prom.waitFor(t, "GpuopsOrderViolation resolved", func() bool {
		return find(prom.alerts(t), "GpuopsOrderViolation", violation) == nil
	})
}

// TestFuseAlertOnRealPrometheus: Prometheus scrapes gpuops serve
// --quarantine=on and evaluates the shipped rule file. While the fuse
// holds, GpuopsQuarantineFuseTripped is not there; two nodes breaking past
// --quarantine-max 1 trip the fuse, and the alert is firing the first time
// Prometheus shows it (the rule has no for: a tripped fuse waits for a
// person); gpuops quarantine reset, the nodes repaired, resolves it.
func TestFuseAlertOnRealPrometheus(t *testing.T) {
	f := newFleet(t)
	gpus := testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: resource.MustParse("8")})
	nodes := []string{f.gpuNode(t, "a", gpus), f.gpuNode(t, "b", gpus)}
	srv := serve(t, append(slices.Clone(f.args), "--quarantine=on", "--quarantine-after", "2s", "--release-after", "1s",
		"--quarantine-max", "1", "--quarantine-rate", "5")...)
	srv.WaitFor(t, "both nodes usable, the fuse read and holding", func(m gpuopstest.Scrape) bool {
		fuse, read := m.Value("gpuops_quarantine_fuse_tripped", nil)
		return m.IsOne("gpuops_node_usable", map[string]string{"node": nodes[0]}) && m.IsOne("gpuops_node_usable", map[string]string{"node": nodes[1]}) &&
			read && fuse == 0
	})
	prom := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	prom.waitFor(t, "the fuse holding in Prometheus", func() bool { return prom.count(t, "gpuops_quarantine_fuse_tripped == 0") == 1 })
	const name = "GpuopsQuarantineFuseTripped"
	if a := find(prom.alerts(t), name, nil); a != nil {
		t.Fatalf("%s %s while the fuse holds", name, a.State)
	}

	for _, n := range nodes {
		f.env.LabelNode(t, n, toolkit.LabelKey(), "false")
	}
	var fired *alert
	prom.waitFor(t, name, func() bool {
		fired = find(prom.alerts(t), name, nil)
		return fired != nil
	})
	if fired.State != "firing" || fired.Annotations["summary"] != "gpuops's quarantine stopped: its fuse tripped" {
		t.Errorf("%s: %+v, want firing at once with its summary", name, fired)
	}
	if prom.count(t, "gpuops_quarantine_fuse_tripped == 1") != 1 {
		t.Errorf("%s fired, but Prometheus has no tripped fuse", name)
	}

	for _, n := range nodes {
		f.env.LabelNode(t, n, toolkit.LabelKey(), "true")
	}
	// A reset while either node is still unusable (its toolkit pod not yet
	// running) would trip the fuse again at once: reset once both are
	// repaired, as a person would.
	srv.WaitFor(t, "both nodes usable again", func(m gpuopstest.Scrape) bool {
		return m.IsOne("gpuops_node_usable", map[string]string{"node": nodes[0]}) && m.IsOne("gpuops_node_usable", map[string]string{"node": nodes[1]})
	})
	gpuopstest.Cluster{Kubeconfig: f.env.Kubeconfig, Namespace: f.env.Namespace}.Want(t, 0, "quarantine", "reset")
	prom.waitFor(t, name+" resolved", func() bool { return find(prom.alerts(t), name, nil) == nil })
	if prom.count(t, "gpuops_quarantine_fuse_tripped == 0") != 1 {
		t.Errorf("%s resolved, but Prometheus has no fuse holding", name)
	}
}

// evaluatedSince waits until Prometheus has evaluated the shipped rules
// (their group, gpuops) after since: what it shows of the alerts then
// stands on the series it held at since.
func (p *prometheus) evaluatedSince(t *testing.T, since time.Time) {
	t.Helper()
	p.waitFor(t, "an evaluation of the rules after "+since.Format(time.RFC3339Nano), func() bool {
		var r struct {
			Data struct {
				Groups []struct {
					Name           string
					LastEvaluation time.Time
				}
			}
		}
		if !p.get(t, "/api/v1/rules", &r) {
			return false
		}
		for _, g := range r.Data.Groups {
			if g.Name == "gpuops" && g.LastEvaluation.After(since) {
				return true
			}
		}
		return false
	})
}

// TestWorkloadAlertsOnRealPrometheus: Prometheus scrapes gpuops serve
// --workloads and evaluates the shipped rule file. A GPU pod waiting because
// the node's GPUs are all allocated is blocked, and no alert names it (the
// fleet is merely full); the node's free GPUs are free, not stranded. A
// stray label that leaves the device plugin without its toolkit makes the
// node unusable: the pod running there is blocked by the stack
// (on-unusable-node) and GpuopsGPUPodsBlockedByStack is pending for its
// namespace, and the node's free GPUs are stranded and GpuopsGPUsStranded
// is pending for its pool (they fire only after 5 minutes and an hour);
// the label put back, both resolve.
func TestWorkloadAlertsOnRealPrometheus(t *testing.T) {
	f := newFleet(t)
	ns, pool, gpu := f.env.Namespace, "A100", string(snapshot.GPUResource)
	a := f.gpuNode(t, "a", testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: resource.MustParse("8")}))
	f.env.LabelNode(t, a, summary.DefaultGroupBy, pool)
	big := testcluster.GPUPod("big", "", 8)
	big.Spec.NodeSelector = map[string]string{corev1.LabelHostname: a}
	for _, p := range []*corev1.Pod{testcluster.GPUPod("train", a, 2), big} {
		if _, err := f.env.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, append(slices.Clone(f.args), "--workloads", "--stuck-after", "2s")...)
	gpus := func(state string) map[string]string {
		return map[string]string{"pool": pool, "resource": gpu, "state": state}
	}
	full := map[string]string{"namespace": ns, "cause": workload.AllAllocated}
	srv.WaitFor(t, "big blocked, all allocated; 6 GPUs free, none stranded", func(m gpuopstest.Scrape) bool {
		free, _ := m.Value("gpuops_gpus", gpus("free"))
		stranded, _ := m.Value("gpuops_gpus", gpus("stranded"))
		return m.IsOne("gpuops_gpu_pods_blocked", full) && free == 6 && stranded == 0 && m.IsOne("gpuops_node_usable", map[string]string{"node": a})
	})
	prom := startPrometheus(t, strings.TrimPrefix(srv.URL, "http://"))
	prom.waitFor(t, "the blocked pod in Prometheus", func() bool {
		return prom.count(t, fmt.Sprintf(`gpuops_gpu_pods_blocked{namespace=%q,cause=%q} == 1`, ns, workload.AllAllocated)) == 1
	})
	prom.evaluatedSince(t, time.Now())
	const blocked, stranded = "GpuopsGPUPodsBlockedByStack", "GpuopsGPUsStranded"
	alerts := prom.alerts(t)
	if x := find(alerts, blocked, map[string]string{"namespace": ns}); x != nil {
		t.Errorf("%s %s for a pod waiting on a full node: %+v", blocked, x.State, x)
	}
	if x := find(alerts, stranded, map[string]string{"pool": pool}); x != nil {
		t.Errorf("%s %s for free GPUs on a usable node: %+v", stranded, x.State, x)
	}

	if err := f.env.Client.CoreV1().Pods(ns).Delete(context.Background(), big.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.env.LabelNode(t, a, toolkit.LabelKey(), "false")
	onUnusable := map[string]string{"namespace": ns, "cause": workload.OnUnusableNode}
	var stuck, idle *alert
	prom.waitFor(t, blocked+" and "+stranded+" pending", func() bool {
		alerts := prom.alerts(t)
		stuck, idle = find(alerts, blocked, onUnusable), find(alerts, stranded, gpus("stranded"))
		return stuck != nil && idle != nil
	})
	want := []struct {
		got                *alert
		name, summary, url string
	}{
		{stuck, blocked, "1 GPU pods of namespace " + ns + " blocked by the GPU stack: " + workload.OnUnusableNode, "#gpuopsgpupodsblockedbystack"},
		{idle, stranded, "6 " + gpu + " stranded in pool " + pool + " for an hour", "#gpuopsgpusstranded"},
	}
	for _, w := range want {
		if w.got.State != "pending" || w.got.Labels["severity"] != "warning" || w.got.Annotations["summary"] != w.summary ||
			!strings.HasSuffix(w.got.Annotations["runbook_url"], "docs/metrics.md"+w.url) {
			t.Errorf("%s: %+v, want pending (it fires only after its for:), severity warning, summary %q, its runbook", w.name, w.got, w.summary)
		}
	}

	f.env.LabelNode(t, a, toolkit.LabelKey(), "true")
	prom.waitFor(t, blocked+" and "+stranded+" resolved", func() bool {
		alerts := prom.alerts(t)
		return find(alerts, blocked, map[string]string{"namespace": ns}) == nil && find(alerts, stranded, map[string]string{"pool": pool}) == nil
	})
}
