package gpuops_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// fakeKubectl answers the scripts' `kubectl get --raw` reads from the files
// nodes.json and pods.json beside it, and logs every call. FAKE_FAIL=nodes or
// pods makes that read fail the way an unreachable cluster does.
const fakeKubectl = `#!/usr/bin/env bash
set -euo pipefail
dir="$(dirname "$0")"
echo "$*" >>"$dir/calls"
[[ "$1 $2" == "get --raw" ]] || { echo "fake kubectl: unexpected call: $*" >&2; exit 99; }
fail() { echo "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?" >&2; exit 1; }
case "$3" in
/api/v1/nodes)
	[[ "${FAKE_FAIL:-}" != nodes ]] || fail
	cat "$dir/nodes.json" ;;
/api/v1/nodes/*)
	[[ "${FAKE_FAIL:-}" != nodes ]] || fail
	jq -e --arg n "${3#/api/v1/nodes/}" '.items[] | select(.metadata.name == $n)' "$dir/nodes.json" >/dev/null ||
		{ echo "Error from server (NotFound): the server could not find the requested resource" >&2; exit 1; } ;;
"/api/v1/namespaces/$FAKE_NAMESPACE/pods")
	[[ "${FAKE_FAIL:-}" != pods ]] || fail
	cat "$dir/pods.json" ;;
"/api/v1/namespaces/$FAKE_NAMESPACE/pods?fieldSelector=spec.nodeName%3D"*)
	[[ "${FAKE_FAIL:-}" != pods ]] || fail
	jq --arg n "${3#*%3D}" '.items |= map(select(.spec.nodeName == $n))' "$dir/pods.json" ;;
*)
	echo "fake kubectl: unexpected path $3" >&2; exit 99 ;;
esac
`

// fakeCluster is a directory with the scripts, a fake kubectl and a cluster state.
type fakeCluster struct {
	dir string
	env []string
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	dir := t.TempDir()
	gpuopstest.InstallScripts(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	return &fakeCluster{dir: dir, env: []string{
		"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"GPUOPS_NAMESPACE=ns", "FAKE_NAMESPACE=ns",
	}}
}

func (f *fakeCluster) set(t *testing.T, nodes []corev1.Node, pods []corev1.Pod) {
	t.Helper()
	for name, list := range map[string]any{
		"nodes.json": corev1.NodeList{Items: nodes},
		"pods.json":  corev1.PodList{Items: pods},
	} {
		b, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(f.dir, "calls"))
}

func (f *fakeCluster) run(t *testing.T, env []string, script string, args ...string) gpuopstest.Output {
	t.Helper()
	return gpuopstest.Run(t, append(f.env, env...), filepath.Join(f.dir, script), args...)
}

func (f *fakeCluster) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Node names whose natural order is easy to get wrong.
var trickyNames = []string{
	"n-2", "n-10", "n-02", "n-1", "n-100", "n-010", "n1", "n01a", "n-a", "n.1",
	"lab-node-2", "lab-node-10", "gpu-0007", "gpu-7", "gpu-7a", "a", "b-3-1", "b-3-01", "b-03-1",
	"n-99999999999999999999", "n-100000000000000000000", "n-100000000000000000001", // beyond float precision
}

var labelValues = []string{"true", "true", "true", "false", "True", "", "pre-installed", "missing"}

// randomState builds nodes and namespace pods with every odd case in the mix.
func randomState(r *rand.Rand) ([]corev1.Node, []corev1.Pod) {
	names := append([]string(nil), trickyNames...)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	names = names[:r.IntN(len(names)+1)]
	var nodes []corev1.Node
	var pods []corev1.Pod
	no := false
	now := metav1.Now()
	for _, name := range names {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
		if r.IntN(10) == 0 {
			n.Labels = nil
		}
		for _, o := range operand.Lab {
			if v := labelValues[r.IntN(len(labelValues))]; v != "missing" && n.Labels != nil {
				n.Labels[o.LabelKey()] = v
			}
			for k := range r.IntN(3) {
				p := daemonPod(fmt.Sprintf("%s-%s-%d", o.DaemonSet, name, k), name, o.DaemonSet)
				switch r.IntN(12) {
				case 0:
					p.Status.Phase = corev1.PodPending
				case 1:
					p.Status.Phase = corev1.PodFailed
				case 2:
					p.DeletionTimestamp = &now
				case 3: // hand-made: the app label, no owner
					p.OwnerReferences = nil
				case 4:
					p.OwnerReferences[0].Controller = &no
				case 5:
					p.OwnerReferences[0].Controller = nil
				case 6:
					p.OwnerReferences[0].Kind = "ReplicaSet"
				case 7:
					p.OwnerReferences[0].Name += "-old"
				case 8:
					p.Spec.NodeName = "" // not scheduled
					p.Status.Phase = corev1.PodPending
				case 9: // a plain owner before the controller
					p.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}}, p.OwnerReferences...)
				}
				pods = append(pods, p)
			}
		}
		nodes = append(nodes, n)
	}
	// A pod of another DaemonSet, and one on a node that is not listed.
	pods = append(pods, daemonPod("validator", "gone", "nvidia-operator-validator"))
	return nodes, pods
}

// daemonPod is a Running pod on node, controlled by the DaemonSet ds.
func daemonPod(name, node, ds string) corev1.Pod {
	yes := true
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"app": ds},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds, Controller: &yes},
			},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// healing returns a Running pod of each operand's DaemonSet wherever a node
// asks for it, so that an audit finds nothing missing.
func healing(nodes []corev1.Node) []corev1.Pod {
	var pods []corev1.Pod
	for _, n := range nodes {
		for _, o := range operand.Lab {
			if n.Labels[o.LabelKey()] != "true" {
				continue
			}
			pods = append(pods, daemonPod(o.DaemonSet+"-"+n.Name+"-healthy", n.Name, o.DaemonSet))
		}
	}
	return pods
}

func snapshotOf(nodes []corev1.Node, pods []corev1.Pod) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Namespace: "ns"}
	for i := range nodes {
		s.Nodes = append(s.Nodes, snapshot.NodeFrom(&nodes[i]))
	}
	for i := range pods {
		s.Pods = append(s.Pods, snapshot.PodFrom(&pods[i]))
	}
	return s
}

// TestScriptsAgreeWithTheJudge runs both scripts (on a fake kubectl) and the
// Go judge on many random states and wants the same lines and exit codes.
func TestScriptsAgreeWithTheJudge(t *testing.T) {
	t.Parallel() // each test has its own fake cluster (a folder) and waits mostly on bash and jq
	f := newFakeCluster(t)
	r := rand.New(rand.NewPCG(4, 2))
	seen := map[string]bool{} // verdicts compared, to prove the states are not too tame
	for round := range 12 {
		nodes, pods := randomState(r)
		if round%4 == 3 {
			pods = append(pods, healing(nodes)...)
		}
		f.set(t, nodes, pods)
		s := snapshotOf(nodes, pods)

		want, wantCode := labAudit(t, s)
		got := f.run(t, nil, "operand-audit.sh")
		if got.Stdout != want || got.Code != wantCode {
			t.Fatalf("round %d: operand-audit.sh exit %d:\n%s%s\ngpuops judge exit %d:\n%s",
				round, got.Code, got.Stdout, got.Stderr, wantCode, want)
		}
		seen[fmt.Sprint("audit ", wantCode)] = true
		if calls := f.calls(t); len(calls) != 2 {
			t.Errorf("round %d: operand-audit.sh made %d API reads, want 2: %q", round, len(calls), calls)
		}

		// A few nodes a round: each check is a few processes.
		for _, n := range nodes[:min(len(nodes), 4)] {
			v, err := judge.Order(s, n.Name, operand.Lab, []operand.Rule{operand.DeviceRule})
			if err != nil {
				t.Fatal(err)
			}
			wantCode := 0
			if !v.OK() {
				wantCode = 1
			}
			got := f.run(t, nil, "order-check.sh", n.Name)
			if got.Stdout != v.String()+"\n" || got.Code != wantCode {
				t.Fatalf("round %d: order-check.sh %s: exit %d %q %s; gpuops judge: exit %d %q",
					round, n.Name, got.Code, got.Stdout, got.Stderr, wantCode, v.String())
			}
			seen[fmt.Sprint("order-check ", wantCode)] = true
		}
	}
	for _, want := range []string{"audit 0", "audit 1", "order-check 0", "order-check 1"} {
		if !seen[want] {
			t.Errorf("no round compared %q", want)
		}
	}
}

func TestScriptsCannotJudge(t *testing.T) {
	t.Parallel()
	f := newFakeCluster(t)
	r := rand.New(rand.NewPCG(1, 1))
	nodes, pods := randomState(r)
	for len(nodes) < 2 {
		nodes, pods = randomState(r)
	}
	f.set(t, nodes, pods)
	// A PATH with what the scripts need but kubectl.
	noKubectl := t.TempDir()
	for _, tool := range []string{"bash", "jq", "mktemp", "rm", "cat", "grep", "tr"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(noKubectl, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		env    []string
		script string
		args   []string
	}{
		{"audit, nodes unreadable", []string{"FAKE_FAIL=nodes"}, "operand-audit.sh", nil},
		{"audit, pods unreadable", []string{"FAKE_FAIL=pods"}, "operand-audit.sh", nil},
		{"audit, no kubectl", []string{"PATH=" + noKubectl}, "operand-audit.sh", nil},
		{"order, no kubectl", []string{"PATH=" + noKubectl}, "order-check.sh", []string{nodes[0].Name}},
		{"order, nodes unreadable", []string{"FAKE_FAIL=nodes"}, "order-check.sh", []string{nodes[0].Name}},
		{"order, pods unreadable", []string{"FAKE_FAIL=pods"}, "order-check.sh", []string{nodes[0].Name}},
		{"order, no node", nil, "order-check.sh", nil},
		{"order, empty node", nil, "order-check.sh", []string{""}},
		{"order, two nodes", nil, "order-check.sh", []string{nodes[0].Name, nodes[1].Name}},
		{"order, unknown node", nil, "order-check.sh", []string{"ghost"}},
		{"order, not a node name", nil, "order-check.sh", []string{"a&fieldSelector=x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.run(t, tc.env, tc.script, tc.args...)
			if got.Code != 2 || got.Stdout != "" || !strings.Contains(got.Stderr, "error: ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, an error on stderr", got.Code, got.Stdout, got.Stderr)
			}
		})
	}
}

// TestAuditScriptAtScale: 5,000 nodes and 25,000 pods pass through files,
// not arguments, and the verdict is still the judge's.
func TestAuditScriptAtScale(t *testing.T) {
	t.Parallel()
	f := newFakeCluster(t)
	var nodes []corev1.Node
	var pods []corev1.Pod
	for i := range 5000 {
		name := fmt.Sprintf("gpu-node-%d", (i*7919)%5000)
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nvidia.com/gpu.present": "true"}}}
		for k, o := range operand.Lab {
			n.Labels[o.LabelKey()] = "true"
			if i%250 == k { // five nodes in 250 lack one pod each
				continue
			}
			pods = append(pods, daemonPod(fmt.Sprintf("%s-%d", o.DaemonSet, i), name, o.DaemonSet))
		}
		nodes = append(nodes, n)
	}
	f.set(t, nodes, pods)
	want, _ := labAudit(t, snapshotOf(nodes, pods))
	got := f.run(t, nil, "operand-audit.sh")
	if got.Code != 1 || got.Stdout != want {
		t.Fatalf("operand-audit.sh at 5,000 nodes: exit %d, %d bytes (want exit 1, %d bytes)\n%s",
			got.Code, len(got.Stdout), len(want), got.Stderr)
	}
	if n := strings.Count(got.Stdout, " MISSING "); n != 5000/250*len(operand.Lab) {
		t.Errorf("%d MISSING lines, want %d", n, 5000/250*len(operand.Lab))
	}
}

// labAudit is gpuops's out/audit.txt of the snapshot, judged as the lab
// judges (its five operands), and the exit code audit gives it.
func labAudit(t *testing.T, s *snapshot.Snapshot) (string, int) {
	t.Helper()
	r, err := pipeline.Decide(s, pipeline.Options{Roster: pipeline.LabRoster}).Judge(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	if r.AuditFailed() {
		code = 1
	}
	return string(report.LabAudit(r)), code
}
