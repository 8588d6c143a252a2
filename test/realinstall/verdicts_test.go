package realinstall_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
)

// verdictsFile is testdata/verdicts.yaml.
type verdictsFile struct {
	Modes []struct {
		Name   string             `json:"name"`
		Roster []string           `json:"roster"`
		Nodes  map[string]verdict `json:"nodes"`
	} `json:"modes"`
}

type verdict struct {
	Audit  string            `json:"audit"`
	Order  string            `json:"order"`
	States map[string]string `json:"states"`
}

// modeState is what an install mode changes: the policy's switches and so
// the DaemonSets the operator renders.
type modeState struct {
	driver, toolkit, nvidiaDriver bool
}

var modeStates = map[string]modeState{
	"default":          {driver: true, toolkit: true},
	"driver-disabled":  {toolkit: true},
	"toolkit-disabled": {driver: true},
	"nvidiadriver":     {driver: true, toolkit: true, nvidiaDriver: true},
}

// auditJSON is what audit -o json says, as far as the verdicts need.
type auditJSON struct {
	OK       bool        `json:"ok"`
	Nodes    []auditNode `json:"nodes"`
	Warnings []struct {
		Node, Code, Operand, Label, Value, Message, By, Since, Progress string
	} `json:"warnings"`
	Disabled []disabled `json:"disabled"`
	Notes    []string   `json:"notes"`
}

type auditNode struct {
	Node    string   `json:"node"`
	Missing []string `json:"missing"`
	Stuck   []string `json:"stuck"`
}

type disabled struct{ Operand, Reason string }

func TestVerdicts(t *testing.T) {
	in := newInstall(t)
	var f verdictsFile
	readYAML(t, "verdicts.yaml", &f)
	labels := in.nodeLabels(t)
	for _, m := range f.Modes {
		state, ok := modeStates[m.Name]
		if !ok {
			t.Fatalf("verdicts.yaml: unknown mode %s", m.Name)
		}
		in.switchTo(t, state)
		t.Run(m.Name, func(t *testing.T) {
			got := in.auditJSON(t, 1)
			for short, want := range m.Nodes {
				node := in.nodes[short]
				if v := derive(got, node, labels[node]); !verdictEqual(v, want) {
					t.Errorf("%s: %+v, want %+v", short, v, want)
				}
				r := gpuopstest.On(in.env).Run(t, "order-check", "--all-rules", node)
				if strings.TrimSpace(r.Stdout) != want.Order || (r.Code == 0) != (want.Order == "ok") {
					t.Errorf("order-check --all-rules %s: exit %d %q %q, want %q", short, r.Code, r.Stdout, r.Stderr, want.Order)
				}
			}
			if len(got.Nodes) != len(m.Nodes) {
				t.Errorf("audit judged %d nodes, want %d", len(got.Nodes), len(m.Nodes))
			}
			in.checkRoster(t, m.Roster)
			in.checkText(t, m.Nodes)
			in.checkLiveAgrees(t)
			in.checkGolden(t, "testdata/golden/"+m.Name)
			in.checkFrom(t)
			if m.Name == "default" {
				in.recordResult(t)
			}
		})
	}
	t.Run("stuck-after", func(t *testing.T) { in.checkStuckAfter(t) })
	in.switchTo(t, modeStates["driver-disabled"])
	t.Run("least privilege", func(t *testing.T) { in.checkLeastPrivilege(t) })
	// Last: it changes the policy, state labels and cordons.
	in.switchTo(t, modeStates["default"])
	t.Run("upgrades", func(t *testing.T) { in.checkUpgrades(t) })
}

// checkStuckAfter: --stuck-after moves the line between a pause and a stuck
// one, from the ages the API server recorded (the pauses of the MIG change
// and of the upgrade are as old as the test, the stuck upgrade's three hours).
func (in *install) checkStuckAfter(t *testing.T) {
	t.Helper()
	stuck := func(a auditJSON) []string {
		var out []string
		for short, name := range in.nodes {
			for _, n := range a.Nodes {
				if n.Node == name && len(n.Stuck) > 0 {
					out = append(out, short)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		after string
		code  int
		want  []string
	}{
		{"4h", 0, nil},
		{"0", 0, nil},
		{"2h", 1, []string{"upgrade-stuck"}},
		{"1ms", 1, []string{"mig-change", "upgrade", "upgrade-stuck"}},
	} {
		if got := stuck(in.auditJSON(t, tc.code, "--stuck-after", tc.after)); !slices.Equal(got, tc.want) {
			t.Errorf("--stuck-after %s: stuck %q, want %q", tc.after, got, tc.want)
		}
	}
}

// derive reads one node's verdict off the JSON audit, in the shape of
// verdicts.yaml.
func derive(a auditJSON, node string, labels map[string]string) verdict {
	v := verdict{States: map[string]string{}}
	for _, n := range a.Nodes {
		if n.Node != node {
			continue
		}
		switch {
		case len(n.Missing) > 0:
			v.Audit = "MISSING " + strings.Join(n.Missing, ",")
		case len(n.Stuck) > 0:
			v.Audit = "STUCK"
		default:
			v.Audit = "OK"
		}
		for _, op := range n.Stuck {
			v.States[op] = "stuck"
		}
	}
	for _, d := range a.Disabled {
		if labels[operand.LabelPrefix+d.Operand] == "true" {
			v.States[d.Operand] = "disabled"
		}
	}
	for _, w := range a.Warnings {
		if w.Node != node {
			continue
		}
		key := w.Operand
		if key == "" {
			key = "node"
		}
		state := w.Code
		if w.Progress != "" {
			state += ":" + w.Progress[strings.Index(w.Progress, "=")+1:]
		}
		if v.States[key] != "stuck" {
			v.States[key] = state
		}
	}
	return v
}

func verdictEqual(a, b verdict) bool {
	if len(a.States) == 0 && len(b.States) == 0 {
		return a.Audit == b.Audit
	}
	return a.Audit == b.Audit && maps.Equal(a.States, b.States)
}

// checkRoster: the discovered roster, in the matrix's columns, is exactly the
// one the verdicts name; with --discover it is the same, with
// --discover=false the lab's five.
func (in *install) checkRoster(t *testing.T, roster []string) {
	t.Helper()
	var want []string
	for _, name := range roster {
		o, err := operand.Lookup(operand.Real, name)
		if err != nil {
			t.Fatalf("verdicts.yaml: %v", err)
		}
		want = append(want, o.Column)
	}
	var lab []string
	for _, o := range operand.Lab {
		lab = append(lab, o.Column)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, want},
		{[]string{"--discover"}, want},
		{[]string{"--discover=false"}, lab},
	} {
		r := in.judge(t, append([]string{"matrix", "-o", "json"}, tc.args...)...)
		var m struct{ Columns []string }
		if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil || r.Code != 0 {
			t.Fatalf("matrix -o json %q: exit %d, %v\n%s%s", tc.args, r.Code, err, r.Stdout, r.Stderr)
		}
		if !slices.Equal(m.Columns, tc.want) {
			t.Errorf("matrix %q: columns %q, want %q", tc.args, m.Columns, tc.want)
		}
	}
}

// checkText: the plain audit says OK or STUCK per node as the verdicts do,
// and --explain names the helper and the threshold of each stuck pause.
func (in *install) checkText(t *testing.T, verdicts map[string]verdict) {
	t.Helper()
	var want []string
	for short, v := range verdicts {
		switch v.Audit {
		case "OK":
			want = append(want, in.nodes[short]+" OK")
		case "STUCK":
			for op, s := range v.States {
				if s == "stuck" {
					want = append(want, in.nodes[short]+" STUCK "+op)
				}
			}
		}
	}
	r := in.judge(t, "audit")
	got := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || r.Code != 1 {
		t.Errorf("audit: exit %d\n%s\nwant exit 1 and the lines\n%s", r.Code, r.Stdout, strings.Join(want, "\n"))
	}
	r = in.judge(t, "audit", "--explain")
	for _, line := range strings.Split(r.Stdout, "\n") {
		if strings.Contains(line, " STUCK ") && !(strings.Contains(line, "driver-manager") && strings.Contains(line, "--stuck-after 30m0s")) {
			t.Errorf("audit --explain: a STUCK line without its helper and threshold: %s", line)
		}
		if strings.Contains(line, " MISSING ") {
			t.Errorf("audit --explain: %s", line)
		}
	}
	if !strings.Contains(r.Stderr, "note: judging the operands of the namespace's DaemonSets: ClusterPolicy cluster-policy renders them") {
		t.Errorf("audit --explain: stderr %q, want the note on the roster", r.Stderr)
	}
}

// auditJSON runs audit -o json and decodes it; code is the exit it must have.
func (in *install) auditJSON(t *testing.T, code int, args ...string) auditJSON {
	t.Helper()
	return decodeAudit(t, in.judge(t, append([]string{"audit", "-o", "json"}, args...)...), code)
}

func decodeAudit(t *testing.T, r gpuopstest.Output, code int) auditJSON {
	t.Helper()
	var a auditJSON
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || r.Code != code {
		t.Fatalf("audit -o json: exit %d (want %d), %v\n%s%s", r.Code, code, err, r.Stdout, r.Stderr)
	}
	return a
}

// judge runs a whole-cluster judge on the install's nodes.
func (in *install) judge(t *testing.T, args ...string) gpuopstest.Output {
	t.Helper()
	return gpuopstest.On(in.env).Run(t, append(args, "-l", in.selector())...)
}

// selector selects the install's nodes.
func (in *install) selector() string { return testcluster.LabelTestID + "=" + in.env.ID }

// nodeLabels reads the labels of the install's nodes.
func (in *install) nodeLabels(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, name := range in.nodes {
		n, err := in.env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = n.Labels
	}
	return out
}

// switchTo makes the install what mode s says, as the operator would: the
// policy's switches, then the DaemonSets it renders for them (deleting the
// ones it no longer renders, with their pods), then waits for the rest to
// settle.
func (in *install) switchTo(t *testing.T, s modeState) {
	t.Helper()
	ctx := context.Background()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{
		"driver":  map[string]any{"enabled": s.driver, "useNvidiaDriverCRD": s.nvidiaDriver},
		"toolkit": map[string]any{"enabled": s.toolkit},
	}})
	p, err := in.dyn.Resource(clusterPolicyGVR).Patch(ctx, in.policy.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in.policy = p
	want := map[string]bool{}
	for _, u := range docs(t, "operator.yaml") {
		if u.GetKind() != "DaemonSet" {
			continue
		}
		switch u.GetName() {
		case "nvidia-driver-daemonset":
			want[u.GetName()] = s.driver && !s.nvidiaDriver
		case "nvidia-container-toolkit-daemonset":
			want[u.GetName()] = s.toolkit
		default:
			want[u.GetName()] = true
		}
		in.ensure(t, u, want[u.GetName()])
	}
	if s.nvidiaDriver {
		for name := range in.nodes {
			if labels := in.nodeLabels(t)[in.nodes[name]]; labels[operand.GPUPresent] == "true" {
				in.label(t, in.nodes[name], "gpu-operator", map[string]string{operand.NVIDIADriverOwner: "default"})
			}
		}
	}
	for _, u := range docs(t, "nvidiadriver.yaml") {
		in.ensure(t, u, s.nvidiaDriver)
	}
	in.settle(t)
}

// checkGolden: every judge, in text and JSON (across the contexts, in
// text), says byte for byte what it said when dir was written (the
// install's names and clock aside). The other formats render the same
// values: pkg/report's goldens render every view in every format, alone and
// across contexts, from a result recorded here (recordResult), and the
// lab's (test/e2e) check them all on a cluster.
func (in *install) checkGolden(t *testing.T, dir string) {
	t.Helper()
	node := in.nodes[slices.Sorted(maps.Keys(in.nodes))[0]]
	gpuopstest.CheckGolden(t, gpuopstest.Cluster{Kubeconfig: gpuopstest.ManyContexts(t, in.env.Kubeconfig), Namespace: in.env.Namespace}, dir,
		gpuopstest.Volatile{in.env.Namespace: "<namespace>", in.env.ID: "<id>", in.env.RESTConfig.Host: "<server>"},
		gpuopstest.TextAndJSON(gpuopstest.JudgeCases(node, in.selector())))
}

// recorded are the nodes of the result recorded for pkg/report: one of each
// kind of verdict (usable or not, paused, stuck, broken order, no GPU).
var recorded = []string{"full", "mig-change", "upgrade-stuck", "stray-labels", "cpu"}

// recordResult judges the recorded nodes with every judge on (as summary,
// health and upgrades together, explained) and records the result, the
// install's names replaced, to a file that must render as the result does:
// with GPUOPS_UPDATE_GOLDEN=1 to pkg/report/testdata/results.json, whose
// views pkg/report's goldens are; else to a file of the test's own.
func (in *install) recordResult(t *testing.T) {
	t.Helper()
	var nodes []string
	for _, short := range recorded {
		nodes = append(nodes, in.nodes[short])
	}
	r, err := pipeline.Run(context.Background(), in.env.Client, pipeline.Options{Namespace: in.env.Namespace, NodeSelector: in.selector(),
		Nodes: nodes, StuckAfter: pipeline.DefaultStuckAfter, Explain: true, Health: true, Upgrades: true, GroupBy: pipeline.DefaultGroupBy})
	if err != nil {
		t.Fatal(err)
	}
	r.Named = false // named to keep the recording small; read whole, they are judged alike
	path := filepath.Join(t.TempDir(), "results.json")
	if os.Getenv(gpuopstest.UpdateGolden) != "" {
		path = "../../pkg/report/testdata/results.json"
	}
	// node names are <namespace>-<short>
	names := gpuopstest.Volatile{in.env.Namespace + "-": "", in.env.Namespace: "gpu-operator", in.env.ID: "recorded"}
	gpuopstest.RecordResult(t, path, r, names, in.nodes["stray-labels"])
}
