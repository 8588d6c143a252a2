package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

// judgeCmd runs a judging command in-process on the test lab's namespace.
func (l *testLab) judgeCmd(args ...string) result {
	l.t.Helper()
	full := append([]string{"gpuops", "--kubeconfig", l.env.Kubeconfig, "-n", l.ns}, args...)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), full, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func wantOutput(t *testing.T, what string, r result, code int, stdout string) {
	t.Helper()
	if r.code != code || r.stdout != stdout {
		t.Errorf("%s: exit %d, stdout:\n%s\nstderr: %s\nwant exit %d, stdout:\n%s", what, r.code, r.stdout, r.stderr, code, stdout)
	}
}

// TestLabOfAnotherSpec runs `gpuops lab` on a lab spec with other node
// names and namespace, then judges the result with every output format.
func TestLabOfAnotherSpec(t *testing.T) {
	l := newTestLab(t)
	n0, n1, n2 := l.nodes[0], l.nodes[1], l.nodes[2]
	matrix := n0 + " driver=yes toolkit=yes device-plugin=yes gfd=yes dcgm=yes\n" +
		n1 + " driver=no toolkit=yes device-plugin=yes gfd=yes dcgm=no\n" +
		n2 + " driver=no toolkit=no device-plugin=yes gfd=no dcgm=no\n" +
		"TOTAL_PODS=9\n"
	r := l.gpuops("lab", "--workdir", l.dir)
	if r.code != 0 || !strings.HasSuffix(r.stdout, matrix) {
		t.Fatalf("gpuops lab: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	files := l.files()
	for name, want := range map[string]string{
		"out/optout.txt": "BEFORE=2\nAFTER=1\n",
		"out/audit.txt":  n0 + " OK\n" + n1 + " OK\n" + n2 + " OK\n",
		"out/order.txt":  n0 + " ok\n" + n1 + " ok\n" + n2 + " device-plugin-without-toolkit\n",
		"out/matrix.txt": matrix,
	} {
		if files[name] != want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, files[name], want)
		}
	}

	wantOutput(t, "matrix", l.judgeCmd("matrix"), 0, matrix)
	wantOutput(t, "order-check", l.judgeCmd("order-check", n2), 1, "device-plugin-without-toolkit\n")
	wantOutput(t, "order-check", l.judgeCmd("order-check", n1), 0, "ok\n")

	// The judges find the namespace of the lab spec (not gpu-operator) as
	// `lab --lab` did, from --lab alone; -n wins over it.
	wantOutput(t, "matrix --lab", l.gpuops("matrix"), 0, matrix)
	wantOutput(t, "audit --lab", l.gpuops("audit"), 0, files["out/audit.txt"])
	wantOutput(t, "order-check --lab", l.gpuops("order-check", n2), 1, "device-plugin-without-toolkit\n")
	empty := strings.NewReplacer("=yes", "=no", "TOTAL_PODS=9", "TOTAL_PODS=0").Replace(matrix)
	wantOutput(t, "matrix --lab -n", l.gpuopsWith(context.Background(), nil, []string{"-n", "gpu-operator"}, "matrix"), 0, empty)

	// A node that asks for everything and gets nothing: a taint keeps the
	// DaemonSets off it.
	asksAll := map[string]string{}
	for _, o := range operand.Lab {
		asksAll[o.LabelKey()] = "true"
	}
	tainted := l.env.NodeName("tainted")
	l.env.AddNode(t, tainted, asksAll, testcluster.WithTaints(corev1.Taint{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}))
	var missing string
	for _, o := range operand.Lab {
		missing += tainted + " MISSING " + o.Name + "\n"
	}
	ours := "-l=" + testcluster.LabelTestID + "=" + l.env.ID
	wantOutput(t, "audit", l.judgeCmd("audit", ours), 1, files["out/audit.txt"]+missing)
	wantOutput(t, "audit of one node", l.judgeCmd("audit", "-l", "kubernetes.io/hostname="+n0), 0, n0+" OK\n")
	wantOutput(t, "matrix of one node", l.judgeCmd("matrix", "--selector", "kubernetes.io/hostname="+n2), 0,
		n2+" driver=no toolkit=no device-plugin=yes gfd=no dcgm=no\nTOTAL_PODS=9\n")

	table := l.judgeCmd("audit", "-o", "table", ours)
	if table.code != 1 || !strings.HasPrefix(table.stdout, "NODE") || strings.Contains(table.stdout, "\x1b") ||
		!strings.Contains(table.stdout, tainted) {
		t.Errorf("audit -o table (not a terminal: no colour): exit %d\n%s", table.code, table.stdout)
	}
	// kubectl's outputs: the nodes with a finding by name, to pipe into
	// kubectl; the table with the reasons; --no-headers, which formats
	// without a header ignore.
	wantOutput(t, "audit -o name", l.judgeCmd("audit", "-o", "name", ours), 1, "node/"+tainted+"\n")
	wantOutput(t, "order-check -o name", l.judgeCmd("order-check", "-o", "name", n2), 1, "node/"+n2+"\n")
	wantOutput(t, "order-check -o name of a node in order", l.judgeCmd("order-check", "-o", "name", n1), 0, "")
	wide := l.judgeCmd("audit", "-o", "wide", "--no-headers", ours)
	reasoned := 0
	for _, line := range strings.Split(wide.stdout, "\n") {
		if strings.HasPrefix(line, tainted+" ") && strings.Contains(line, "MISSING") && strings.Contains(line, "example.com/broken") {
			reasoned++
		}
	}
	if wide.code != 1 || strings.HasPrefix(wide.stdout, "NODE") || reasoned != len(operand.Lab) {
		t.Errorf("audit -o wide --no-headers (rows, with the reasons): exit %d\n%s", wide.code, wide.stdout)
	}
	js := l.judgeCmd("audit", "-o", "json", ours)
	wantOutput(t, "audit -o json --no-headers", l.judgeCmd("audit", "-o", "json", "--no-headers", ours), 1, js.stdout)
	var doc struct {
		OK    bool `json:"ok"`
		Nodes []struct {
			Node    string   `json:"node"`
			Missing []string `json:"missing"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil || js.code != 1 || doc.OK || len(doc.Nodes) != 4 ||
		doc.Nodes[3].Node != tainted || len(doc.Nodes[3].Missing) != len(operand.Lab) {
		t.Errorf("audit -o json: exit %d, %v\n%s", js.code, err, js.stdout)
	}
	js = l.judgeCmd("order-check", "-o", "json", n2)
	if !strings.Contains(js.stdout, `"verdict": "device-plugin-without-toolkit"`) || js.code != 1 {
		t.Errorf("order-check -o json: exit %d\n%s", js.code, js.stdout)
	}
}

// TestJudgesCannotJudge: whatever keeps a judge from reading the cluster or
// the user's input is exit 2 with one error line and nothing on stdout.
func TestJudgesCannotJudge(t *testing.T) {
	l := newTestLab(t)
	unreachable := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"order-check", l.env.NodeName("absent")}, "not found"},
		{[]string{"order-check", "Not_A_Node"}, "Not_A_Node"},
		{[]string{"order-check"}, "NODE"},
		{[]string{"order-check", "a", "b"}, "NODE"},
		{[]string{"audit", "extra"}, "extra"},
		{[]string{"audit", "-o", "xml"}, "xml"},
		{[]string{"matrix", "-l", "a in ("}, "selector"},
		{[]string{"--request-timeout=2s", "--kubeconfig", unreachable, "audit"}, "127.0.0.1:1"},
		{[]string{"--request-timeout=2s", "--kubeconfig", unreachable, "order-check", l.nodes[0]}, "127.0.0.1:1"},
		{[]string{"--kubeconfig", filepath.Join(t.TempDir(), "none"), "matrix"}, "kubeconfig"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := l.judgeCmd(tc.args...)
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			wantError(t, r, tc.want)
		})
	}
}

// unreachableKubeconfig is a kubeconfig whose one context names a server
// nothing listens on (port 1), for the commands' unreachable-cluster paths.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "unreachable")
	if err := os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
