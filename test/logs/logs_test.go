// Package logs_test reads failing containers' logs on a real control plane
// (health --logs, report --logs, serve --logs): KWOK holds the driver's
// pods in a crash loop (hack/kwokctl.yaml's crash-loop stage) and serves
// their containers' logs as a kubelet does, from files its Logs resource
// names, through the API server's pods/log.
package logs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// healthyLog is a driver container's log that went well, as
// pkg/signature's own tests hold it.
const healthyLog = "../../pkg/signature/testdata/healthy/driver.log"

// fleet is a GPU node per catalog entry, whose driver pod's previous
// instance logged the entry's first text after a healthy start, and one
// whose previous instance logged only the healthy start: every node's
// driver crash-loops. want maps each node to the code its hint must have
// ("" for none).
type fleet struct {
	env  *testcluster.Env
	want map[string]string
}

func newFleet(t *testing.T) fleet {
	env := testcluster.New(t)
	ctx := context.Background()
	driver := operand.Lab.Driver()
	ds := testcluster.DaemonSet(env.Namespace, driver.DaemonSet, map[string]string{driver.LabelKey(): "true", "logs.gpuops.test/id": env.ID}, "16Mi")
	ds.Spec.Template.Annotations = map[string]string{"gpuops.test/pod-state": "crash-loop"}
	if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := fleet{env: env, want: map[string]string{}}
	for _, s := range signature.Catalog {
		f.want[env.NodeName(s.Code)] = s.Code
	}
	f.want[env.NodeName("healthy")] = ""
	for node := range f.want {
		env.AddNode(t, node, map[string]string{operand.GPUPresent: "true", driver.LabelKey(): "true", "logs.gpuops.test/id": env.ID})
	}
	pods := env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		if len(pods) != len(f.want) {
			return false
		}
		for i := range pods {
			if snapshot.PodFrom(&pods[i]).Health.State != "CrashLoopBackOff" {
				return false
			}
		}
		return true
	})

	healthy, err := os.ReadFile(healthyLog)
	if err != nil {
		t.Fatal(err)
	}
	var logs []testcluster.ContainerLog
	for i := range pods {
		previous := string(healthy)
		if code := f.want[pods[i].Spec.NodeName]; code != "" {
			s, _ := signature.Of(code)
			previous += "ERROR: " + s.Texts[0] + "\n"
		}
		logs = append(logs, testcluster.ContainerLog{Pod: &pods[i], Container: pods[i].Spec.Containers[0].Name,
			Current: "Stopping NVIDIA persistence daemon...\n", Previous: previous})
	}
	env.ServeLogs(t, logs)
	return f
}

// args are a command's, on the fleet's nodes and namespace, discovering
// the roster (the driver's DaemonSet).
func (f fleet) args(cmd ...string) []string {
	return append(cmd, "--discover", "-l", testcluster.LabelTestID+"="+f.env.ID)
}

// healthJSON runs health -o json with the args, as the cluster c.
func healthJSON(t *testing.T, c gpuopstest.Cluster, args []string) (nodes []health.Node, notes []string, stderr string) {
	t.Helper()
	r := c.Run(t, append(args, "-o", "json")...)
	var got struct {
		Nodes    []health.Node
		LogNotes []string
	}
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || r.Code != 1 {
		t.Fatalf("health -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	return got.Nodes, got.LogNotes, r.Stderr
}

func TestHealthLogs(t *testing.T) {
	f := newFleet(t)
	c := gpuopstest.On(f.env)

	// Without --logs: no hint, no note.
	nodes, notes, _ := healthJSON(t, c, f.args("health"))
	for _, n := range nodes {
		if len(n.Hints) > 0 || n.Usable {
			t.Errorf("health without --logs, %s: usable %v, hints %+v", n.Node, n.Usable, n.Hints)
		}
	}
	if len(notes) > 0 {
		t.Errorf("notes without --logs: %q", notes)
	}

	// Each entry matched from the log KWOK serves; none from the healthy one.
	nodes, notes, _ = healthJSON(t, c, f.args("health", "--logs"))
	if len(nodes) != len(f.want) || len(notes) > 0 {
		t.Fatalf("health --logs: %d nodes (want %d), notes %q", len(nodes), len(f.want), notes)
	}
	for _, n := range nodes {
		code := f.want[n.Node]
		switch {
		case n.Usable || n.Cause == nil || n.Cause.Code != health.CrashLoop:
			t.Errorf("%s: the verdict changed with --logs: usable %v cause %+v", n.Node, n.Usable, n.Cause)
		case code == "" && len(n.Hints) > 0:
			t.Errorf("%s: the healthy log matched %+v", n.Node, n.Hints)
		case code != "" && (len(n.Hints) != 1 || n.Hints[0].Code != code || !n.Hints[0].Previous || !strings.Contains(n.Hints[0].Line, "ERROR: ")):
			t.Errorf("%s: hints %+v, want one %s from the previous instance's log", n.Node, n.Hints, code)
		}
	}

	// Text: the verdict's line ends with the hint; --explain says whose
	// log, the cause and the remedy.
	sig := signature.Catalog[0]
	node := f.env.NodeName(sig.Code)
	r := c.Run(t, f.args("health", "--logs", "--explain", node)...)
	if r.Code != 1 || !strings.Contains(r.Stdout, node+" UNUSABLE crash-loop driver hint "+sig.Code+"\n") ||
		!strings.Contains(r.Stdout, "    cause: "+sig.Cause+"\n") || !strings.Contains(r.Stdout, "    remedy: "+sig.Remedy+"\n") {
		t.Errorf("health --logs --explain %s: exit %d\n%s%s", node, r.Code, r.Stdout, r.Stderr)
	}

	// The HTML report's health column (its exit code is the fleet's: every
	// driver pod runs, if it crash-loops, so none is missing).
	page := filepath.Join(t.TempDir(), "report.html")
	r = c.Run(t, f.args("report", "--logs", "--html", page)...)
	html, err := os.ReadFile(page)
	if err != nil || r.Code != 0 || !strings.Contains(string(html), "hint <code>"+sig.Code+"</code>") {
		t.Errorf("report --logs --html: exit %d, %v; page holds the hint: %v\n%s", r.Code, err, strings.Contains(string(html), sig.Code), r.Stderr)
	}

	t.Run("without pods/log", func(t *testing.T) { checkForbidden(t, f) })
	t.Run("serve", func(t *testing.T) { checkServe(t, f) })
}

// checkForbidden: a service account that may read everything health reads
// but pods/log gets the verdicts and a note; given get on pods/log, the
// hints.
func checkForbidden(t *testing.T, f fleet) {
	env, ns, sa := f.env, f.env.Namespace, "logs-reader"
	env.Kubectl(t, "create", "serviceaccount", sa, "-n", ns)
	env.Kubectl(t, "create", "role", sa, "-n", ns, "--verb=list", "--resource=pods,daemonsets,controllerrevisions,configmaps")
	env.Kubectl(t, "create", "rolebinding", sa, "-n", ns, "--role="+sa, "--serviceaccount="+ns+":"+sa)
	env.Kubectl(t, "create", "clusterrole", sa+"-"+env.ID, "--verb=list", "--resource=nodes")
	env.Kubectl(t, "create", "clusterrolebinding", sa+"-"+env.ID, "--clusterrole="+sa+"-"+env.ID, "--serviceaccount="+ns+":"+sa)
	t.Cleanup(func() {
		env.Kubectl(t, "delete", "clusterrolebinding,clusterrole", sa+"-"+env.ID, "--ignore-not-found")
	})
	c := gpuopstest.Cluster{Kubeconfig: env.AccountKubeconfig(t, ns, sa), Namespace: ns}

	nodes, notes, _ := healthJSON(t, c, f.args("health", "--logs"))
	want := "--logs: no right to read the logs of pods in namespace " + ns + " (get on pods/log)"
	if len(notes) != 1 || !strings.HasPrefix(notes[0], want) || len(nodes) != len(f.want) {
		t.Errorf("health --logs without pods/log: %d nodes, notes %q, want one %q", len(nodes), notes, want)
	}
	for _, n := range nodes {
		if len(n.Hints) > 0 || n.Usable {
			t.Errorf("%s without pods/log: usable %v, hints %+v", n.Node, n.Usable, n.Hints)
		}
	}
	r := c.Run(t, f.args("health", "--logs")...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "note: "+want) {
		t.Errorf("health --logs without pods/log: exit %d, stderr:\n%s", r.Code, r.Stderr)
	}

	env.Kubectl(t, "create", "role", sa+"-logs", "-n", ns, "--verb=get", "--resource=pods/log")
	env.Kubectl(t, "create", "rolebinding", sa+"-logs", "-n", ns, "--role="+sa+"-logs", "--serviceaccount="+ns+":"+sa)
	nodes, notes, _ = healthJSON(t, c, f.args("health", "--logs"))
	hinted := 0
	for _, n := range nodes {
		hinted += len(n.Hints)
	}
	if len(notes) > 0 || hinted != len(signature.Catalog) {
		t.Errorf("health --logs with get on pods/log: %d hints (want %d), notes %q", hinted, len(signature.Catalog), notes)
	}
}

// checkServe: serve --logs exports each node's host fault, the healthy
// log's node none.
func checkServe(t *testing.T, f fleet) {
	s := gpuopstest.On(f.env).Serve(t, f.args("serve", "--logs")...)
	const fault = "gpuops_node_host_fault"
	m := s.WaitFor(t, "every host fault", func(m gpuopstest.Scrape) bool { return len(m.Samples(fault)) == len(signature.Catalog) })
	for node, code := range f.want {
		if code == "" {
			if m.HasSeries(fault, map[string]string{"node": node}) {
				t.Errorf("serve --logs: a host fault on the healthy log's node %s: %q", node, m.Series(fault))
			}
			continue
		}
		if !m.IsOne(fault, map[string]string{"code": code, "node": node}) {
			t.Errorf("serve --logs: no %s on %s in %q", code, node, m.Series(fault))
		}
	}
}
