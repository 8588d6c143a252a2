package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
)

// testLab is the lab of lab/lab.yaml rebuilt with this test's own nodes and
// namespace: same labels, same opt-out and opt-in targets, other names.
type testLab struct {
	t     *testing.T
	env   *testcluster.Env
	spec  *labspec.Lab
	file  string // the lab spec, for --lab
	dir   string // the workspace, for --workdir
	ns    string // created by gpuops up, not by the harness
	nodes []string
	// the lab's three roles
	gpuNoDriver, gpuDriver, noGPU string
}

// newTestLab creates the test's nodes (the default lab's, renamed) and
// writes its lab spec. opts apply to the first GPU node.
func newTestLab(t *testing.T, opts ...testcluster.NodeOption) *testLab {
	t.Helper()
	env := testcluster.New(t)
	spec, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	l := &testLab{t: t, env: env, spec: spec, dir: t.TempDir(), ns: env.Namespace + "-lab"}
	rename := map[string]string{}
	for i := range spec.Nodes {
		name := env.NodeName(fmt.Sprint(i))
		rename[spec.Nodes[i].Name] = name
		spec.Nodes[i].Name = name
		l.nodes = append(l.nodes, name)
		var o []testcluster.NodeOption
		if i == 0 {
			o = opts
		}
		env.AddNode(t, name, nil, o...)
		// the controller manager adds the beta.kubernetes.io labels soon
		// after; wait, so that no label changes later behind the test's back
		env.WaitForNode(t, name, func(n *corev1.Node) bool { return n.Labels[corev1.LabelOSStable] == n.Labels["beta.kubernetes.io/os"] })
	}
	spec.Namespace = l.ns
	spec.OptOut.Node, spec.OptIn.Node = rename[spec.OptOut.Node], rename[spec.OptIn.Node]
	l.gpuNoDriver, l.gpuDriver, l.noGPU = l.nodes[0], l.nodes[1], l.nodes[2]
	l.file = filepath.Join(t.TempDir(), "lab.yaml")
	l.writeSpec()
	t.Cleanup(func() {
		err := env.Client.CoreV1().Namespaces().Delete(context.Background(), l.ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", l.ns, err)
		}
	})
	return l
}

// writeSpec writes l.spec to l.file.
func (l *testLab) writeSpec() {
	l.t.Helper()
	data, err := yaml.Marshal(l.spec)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(l.file, data, 0o644); err != nil {
		l.t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// gpuopsWith runs gpuops in-process against the test cluster, with global
// flags (a --kubeconfig there replaces the test cluster's) and a command.
// Provisioning commands get the test's --lab and, where they write files,
// its --workdir, unless args give their own.
func (l *testLab) gpuopsWith(ctx context.Context, stderr io.Writer, global []string, args ...string) result {
	l.t.Helper()
	full := []string{"gpuops"}
	if !slices.Contains(global, "--kubeconfig") {
		full = append(full, "--kubeconfig", l.env.Kubeconfig)
	}
	full = append(full, global...)
	full = append(full, args[0])
	if !slices.Contains(args, "--lab") {
		full = append(full, "--lab", l.file)
	}
	if args[0] == "up" || args[0] == "optout" {
		full = append(full, "--workdir", l.dir)
	}
	full = append(full, args[1:]...)
	var stdout, errs bytes.Buffer
	w := io.Writer(&errs)
	if stderr != nil {
		w = io.MultiWriter(stderr, &errs)
	}
	code := run(ctx, full, &stdout, w)
	return result{code, stdout.String(), errs.String()}
}

func (l *testLab) gpuops(args ...string) result {
	l.t.Helper()
	return l.gpuopsWith(context.Background(), nil, nil, args...)
}

// mustGpuops runs gpuops and fails the test unless it exits 0.
func (l *testLab) mustGpuops(args ...string) result {
	l.t.Helper()
	r := l.gpuops(args...)
	if r.code != 0 {
		l.t.Fatalf("gpuops %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// wantError checks a failure: exit 2 and one "error: ..." line on stderr
// (after any progress lines) that contains each of want.
func wantError(t *testing.T, r result, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if r.code != 2 || !strings.HasPrefix(last, "error: ") || !strings.HasSuffix(r.stderr, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 2 and a last line \"error: ...\"", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "error: "); n != 1 {
		t.Errorf("%d error lines, want 1: %q", n, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("error %q does not mention %q", last, w)
		}
	}
}

// files returns the workspace's files under k8s/ and out/, path → content.
func (l *testLab) files() map[string]string {
	l.t.Helper()
	out := map[string]string{}
	for _, sub := range []string{"k8s", "out"} {
		entries, err := os.ReadDir(filepath.Join(l.dir, sub))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			l.t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(l.dir, sub, e.Name()))
			if err != nil {
				l.t.Fatal(err)
			}
			out[sub+"/"+e.Name()] = string(b)
		}
	}
	return out
}

// clusterState is what the lab's commands change, as a comparable value.
type clusterState struct {
	NamespaceExists bool
	Labels          map[string]map[string]string // node → labels
	DaemonSets      map[string]string            // name → template, as YAML
	Running         map[string][]string          // DaemonSet → nodes with a Running pod
	ResourceVersion map[string]string            // object → resourceVersion
}

func (l *testLab) state() clusterState {
	l.t.Helper()
	ctx := context.Background()
	c := l.env.Client
	s := clusterState{Labels: map[string]map[string]string{}, DaemonSets: map[string]string{},
		Running: map[string][]string{}, ResourceVersion: map[string]string{}}
	ns, err := c.CoreV1().Namespaces().Get(ctx, l.ns, metav1.GetOptions{})
	switch {
	case err == nil:
		s.NamespaceExists = ns.DeletionTimestamp == nil
		s.ResourceVersion["namespace"] = ns.ResourceVersion
	case !apierrors.IsNotFound(err):
		l.t.Fatal(err)
	}
	for _, name := range l.nodes {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			l.t.Fatal(err)
		}
		s.Labels[name] = n.Labels
		s.ResourceVersion["node/"+name] = n.ResourceVersion
	}
	dss, err := c.AppsV1().DaemonSets(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	names := map[types.UID]string{}
	for _, ds := range dss.Items {
		tmpl, _ := yaml.Marshal(ds.Spec.Template)
		s.DaemonSets[ds.Name] = string(tmpl)
		s.ResourceVersion["daemonset/"+ds.Name] = ds.ResourceVersion
		names[ds.UID] = ds.Name
	}
	pods, err := c.CoreV1().Pods(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, p := range pods.Items {
		s.ResourceVersion["pod/"+p.Name] = p.ResourceVersion
		if ref := metav1.GetControllerOf(&p); ref != nil && testcluster.PodRunningOn(&p, p.Spec.NodeName) {
			ds := names[ref.UID]
			s.Running[ds] = append(s.Running[ds], p.Spec.NodeName)
		}
	}
	for _, nodes := range s.Running {
		slices.Sort(nodes)
	}
	return s
}

// withoutVersions is the state without resourceVersions and pod names: what
// must be equal after a reset and an up.
func (s clusterState) withoutVersions() clusterState {
	s.ResourceVersion = nil
	return s
}

func diffState(t *testing.T, what string, got, want clusterState) {
	t.Helper()
	g, _ := yaml.Marshal(got)
	w, _ := yaml.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("%s: cluster state differs\ngot:\n%s\nwant:\n%s", what, g, w)
	}
}

func diffFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s: workspace files differ\ngot:  %q\nwant: %q", what, got, want)
	}
}

func TestUpProvisionsTheLab(t *testing.T) {
	l := newTestLab(t)
	r := l.mustGpuops("up")
	if !strings.Contains(r.stdout, "namespace/"+l.ns+" created") {
		t.Errorf("stdout does not report the namespace created:\n%s", r.stdout)
	}

	s := l.state()
	gpuLabels := map[string]string{"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.present": "true"}
	for _, n := range l.nodes {
		deploy := map[string]string{}
		for k, v := range s.Labels[n] {
			if strings.HasPrefix(k, operand.LabelPrefix) || gpuLabels[k] != "" {
				deploy[k] = v
			}
		}
		want := map[string]string{}
		if n != l.noGPU {
			maps.Copy(want, gpuLabels)
			for _, o := range operand.Lab {
				want[o.LabelKey()] = "true"
			}
			if n == l.gpuDriver {
				want["nvidia.com/gpu.deploy.driver"] = "false"
			}
		}
		if !maps.Equal(deploy, want) {
			t.Errorf("node %s: GPU labels %v, want %v", n, deploy, want)
		}
	}
	both := []string{l.gpuNoDriver, l.gpuDriver}
	slices.Sort(both)
	wantRunning := map[string][]string{
		"nvidia-driver-daemonset":            {l.gpuNoDriver},
		"nvidia-container-toolkit-daemonset": both,
		"nvidia-device-plugin-daemonset":     both,
		"gpu-feature-discovery":              both,
		"nvidia-dcgm-exporter":               both,
	}
	if !maps.EqualFunc(s.Running, wantRunning, slices.Equal) {
		t.Errorf("Running pods per DaemonSet %v, want %v", s.Running, wantRunning)
	}

	manifests, err := render.Operands(gpuops.Kustomize, operand.Lab, l.ns)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"out/roster.txt": "driver=nvidia.com/gpu.deploy.driver\n" +
			"container-toolkit=nvidia.com/gpu.deploy.container-toolkit\n" +
			"device-plugin=nvidia.com/gpu.deploy.device-plugin\n" +
			"gpu-feature-discovery=nvidia.com/gpu.deploy.gpu-feature-discovery\n" +
			"dcgm-exporter=nvidia.com/gpu.deploy.dcgm-exporter\n",
		"out/driver.txt": "DESIRED=1\nSKIPPED=" + l.gpuDriver + "\n",
	}
	for _, m := range manifests {
		want["k8s/"+m.Operand.Manifest] = string(m.YAML)
	}
	diffFiles(t, "after up", l.files(), want)
	for _, script := range []string{"operand-audit.sh", "order-check.sh"} {
		fi, err := os.Stat(filepath.Join(l.dir, script))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s not installed executable: %v", script, err)
		}
	}

	// A second up with nothing changed modifies no object and stays quiet.
	r = l.mustGpuops("up")
	diffState(t, "second up", l.state(), s)
	if strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") || strings.Contains(r.stdout, "labelled") {
		t.Errorf("second up reports changes:\n%s", r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("second up printed progress though nothing had to settle: %q", r.stderr)
	}
}

func TestResetThenUpReproducesTheLab(t *testing.T) {
	l := newTestLab(t)
	// a label of somebody else's, on a key gpuops does not set, must survive reset
	l.env.LabelNode(t, l.gpuDriver, "example.com/rack", "r7")
	before := l.state()
	l.mustGpuops("up")
	afterUp, filesAfterUp := l.state(), l.files()

	r := l.mustGpuops("reset")
	if !strings.Contains(r.stdout, "namespace/"+l.ns+" deleted") {
		t.Errorf("reset did not report the namespace deleted:\n%s", r.stdout)
	}
	diffState(t, "after reset", l.state().withoutVersions(), before.withoutVersions())
	diffFiles(t, "reset leaves k8s/ and out/ alone", l.files(), filesAfterUp)

	l.mustGpuops("up")
	diffState(t, "reset then up", l.state().withoutVersions(), afterUp.withoutVersions())
	diffFiles(t, "reset then up", l.files(), filesAfterUp)
}

func TestOptOutOptIn(t *testing.T) {
	l := newTestLab(t)
	l.mustGpuops("up")
	before := l.state()

	r := l.mustGpuops("optout", l.gpuDriver, "dcgm-exporter")
	if got := l.files()["out/optout.txt"]; got != "BEFORE=2\nAFTER=1\n" {
		t.Errorf("out/optout.txt = %q, want \"BEFORE=2\\nAFTER=1\\n\"", got)
	}
	if !strings.Contains(r.stdout, "nvidia-dcgm-exporter desiredNumberScheduled 2 -> 1") {
		t.Errorf("optout stdout: %q", r.stdout)
	}
	s := l.state()
	wantLabels := maps.Clone(before.Labels[l.gpuDriver])
	wantLabels["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
	if !maps.Equal(s.Labels[l.gpuDriver], wantLabels) {
		t.Errorf("labels after optout %v, want only dcgm-exporter changed: %v", s.Labels[l.gpuDriver], wantLabels)
	}
	if got := s.Running["nvidia-dcgm-exporter"]; !slices.Equal(got, []string{l.gpuNoDriver}) {
		t.Errorf("dcgm-exporter runs on %v after optout, want only %s", got, l.gpuNoDriver)
	}

	// the device plugin without the toolkit breaks the start-up order: refused,
	// nothing changed; --force carries it out with a warning (the lab's step 7)
	labels := l.state().Labels[l.noGPU]
	wantError(t, l.gpuops("optin", l.noGPU, "device-plugin"), l.noGPU, "container-toolkit", "--with-dependencies")
	if got := l.state().Labels[l.noGPU]; !maps.Equal(got, labels) {
		t.Errorf("a refused optin changed the labels: %v, was %v", got, labels)
	}
	r = l.mustGpuops("optin", l.noGPU, "device-plugin", "--force")
	if !strings.Contains(r.stderr, "warning:") {
		t.Errorf("a forced optin that breaks the order says no warning: %q", r.stderr)
	}
	if !strings.Contains(r.stdout, "nvidia-device-plugin-daemonset desiredNumberScheduled 2 -> 3") {
		t.Errorf("optin stdout: %q", r.stdout)
	}
	if got := l.state().Running["nvidia-device-plugin-daemonset"]; !slices.Contains(got, l.noGPU) || len(got) != 3 {
		t.Errorf("device-plugin runs on %v after optin, want the three nodes", got)
	}

	// reset takes off every label gpuops set, the opt-in's included
	l.mustGpuops("reset")
	for _, n := range l.nodes {
		for k := range l.state().Labels[n] {
			if strings.HasPrefix(k, "nvidia.com/") || strings.HasPrefix(k, "feature.node.kubernetes.io/") {
				t.Errorf("node %s keeps label %s after reset", n, k)
			}
		}
	}
}

func TestForeignDaemonSetIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, image string }{
		{"conflicting values", "example.com/other-driver:1"},
		{"same values, shared ownership", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLab(t)
			ctx := context.Background()
			c := l.env.Client
			if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			manifests, err := render.Operands(gpuops.Kustomize, operand.Lab, l.ns)
			if err != nil {
				t.Fatal(err)
			}
			var ds appsv1.DaemonSet
			if err := yaml.Unmarshal(manifests[0].YAML, &ds); err != nil {
				t.Fatal(err)
			}
			if tc.image != "" {
				ds.Spec.Template.Spec.Containers[0].Image = tc.image
			}
			if _, err := c.AppsV1().DaemonSets(l.ns).Create(ctx, &ds, metav1.CreateOptions{FieldManager: "gpu-operator"}); err != nil {
				t.Fatal(err)
			}
			l.env.WaitForDaemonSet(t, l.ns, ds.Name, statusCaughtUp)
			before := l.state()

			wantError(t, l.gpuops("up"), "daemonset.apps/"+l.ns+"/nvidia-driver-daemonset", `"gpu-operator"`, "--force")
			diffState(t, "refused up", l.state(), before)
			diffFiles(t, "refused up", l.files(), map[string]string{})

			l.mustGpuops("up", "--force")
			// reset leaves what another manager shaped, and the namespace gpuops did not create
			r := l.mustGpuops("reset")
			if !strings.Contains(r.stdout, "nvidia-driver-daemonset kept") {
				t.Errorf("reset does not say it kept the shared DaemonSet:\n%s", r.stdout)
			}
			s := l.state()
			if !s.NamespaceExists || s.DaemonSets["nvidia-driver-daemonset"] == "" || len(s.DaemonSets) != 1 {
				t.Errorf("after reset: namespace exists %v, DaemonSets %v; want the namespace and only the shared DaemonSet", s.NamespaceExists, slices.Collect(maps.Keys(s.DaemonSets)))
			}
		})
	}
}

// statusCaughtUp reports whether the DaemonSet controller has written the
// status of what it did, so that no further write of it is due.
func statusCaughtUp(ds *appsv1.DaemonSet) bool {
	st := ds.Status
	return st.ObservedGeneration >= ds.Generation && st.NumberMisscheduled == 0 &&
		st.CurrentNumberScheduled == st.DesiredNumberScheduled && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
		st.NumberReady == st.DesiredNumberScheduled && st.NumberAvailable == st.DesiredNumberScheduled
}

func TestForeignLabelIsRefused(t *testing.T) {
	l := newTestLab(t)
	// somebody else set a deploy label that the lab spec sets too
	l.env.LabelNode(t, l.gpuDriver, "nvidia.com/gpu.deploy.driver", "pre-installed")
	before := l.state()
	wantError(t, l.gpuops("up"), "node/"+l.gpuDriver, "nvidia.com/gpu.deploy.driver", "--force")
	diffState(t, "refused up", l.state(), before)
	diffFiles(t, "refused up", l.files(), map[string]string{})

	l.mustGpuops("up", "--force")
	if got := l.state().Labels[l.gpuDriver]["nvidia.com/gpu.deploy.driver"]; got != "false" {
		t.Errorf("after up --force the driver label is %q, want false", got)
	}

	// optout refuses a label another manager changed since
	l.env.LabelNode(t, l.gpuNoDriver, "nvidia.com/gpu.deploy.dcgm-exporter", "paused")
	l.env.WaitForPods(t, l.ns, func(pods []corev1.Pod) bool { // the controller has reacted
		return !slices.ContainsFunc(testcluster.PodsOn(pods, l.gpuNoDriver), func(p corev1.Pod) bool {
			return strings.HasPrefix(p.Name, "nvidia-dcgm-exporter-")
		})
	})
	// and has written the DaemonSet's status for it (else that write could land mid-test)
	l.env.WaitForDaemonSet(t, l.ns, "nvidia-dcgm-exporter", statusCaughtUp)
	before, files := l.state(), l.files()
	wantError(t, l.gpuops("optout", l.gpuNoDriver, "dcgm-exporter"), "nvidia.com/gpu.deploy.dcgm-exporter", "--force")
	diffState(t, "refused optout", l.state(), before)
	diffFiles(t, "refused optout", l.files(), files)
}

func TestBadInputChangesNothing(t *testing.T) {
	l := newTestLab(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unreachable := unreachableKubeconfig(t)
	broken := write("broken", "apiVersion: v1\nkind: Config\nclusters: [oops\n")
	missingNodeLab := strings.ReplaceAll(mustRead(t, l.file), l.noGPU, l.env.NodeName("absent"))

	// a namespace on its way out cannot take new objects
	terminating := l.env.Namespace + "-term"
	ctx := context.Background()
	c := l.env.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: terminating, Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CoreV1().Namespaces().Patch(ctx, terminating, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := c.CoreV1().Namespaces().Delete(ctx, terminating, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		global []string
		args   []string
		want   []string
	}{
		{"unknown operand", nil, []string{"optout", l.gpuDriver, "nope"}, []string{`unknown operand "nope"`}},
		{"optin unknown operand", nil, []string{"optin", l.noGPU, "nope"}, []string{`unknown operand "nope"`}},
		{"node that does not exist", nil, []string{"optout", l.env.NodeName("absent"), "dcgm-exporter"}, []string{"node " + l.env.NodeName("absent") + " not found"}},
		{"lab node that does not exist", nil, []string{"up", "--lab", write("missing-node.yaml", missingNodeLab)}, []string{"node " + l.env.NodeName("absent") + " not found"}},
		{"missing kubeconfig", []string{"--kubeconfig", filepath.Join(dir, "absent")}, []string{"up"}, []string{"kubeconfig"}},
		{"broken kubeconfig", []string{"--kubeconfig", broken}, []string{"up"}, []string{"kubeconfig"}},
		{"unreachable API server", []string{"--kubeconfig", unreachable}, []string{"up"}, []string{"127.0.0.1:1"}},
		{"unreachable API server on optout", []string{"--kubeconfig", unreachable}, []string{"optout", l.gpuDriver, "dcgm-exporter"}, []string{"127.0.0.1:1"}},
		{"unreachable API server on reset", []string{"--kubeconfig", unreachable}, []string{"reset"}, []string{"127.0.0.1:1"}},
		{"invalid namespace name", []string{"-n", "Not_A_Namespace"}, []string{"up"}, []string{"namespace Not_A_Namespace cannot be created"}},
		{"namespace being deleted", []string{"-n", terminating}, []string{"up"}, []string{"namespace " + terminating + " is being deleted"}},
		{"invalid lab spec", nil, []string{"up", "--lab", write("bad.yaml", "namespace: x\nnodes:\n- name: a\n  operands: {nope: true}\n")}, []string{"invalid lab spec", "nope"}},
		{"lab spec that is not YAML", nil, []string{"up", "--lab", write("garbage.yaml", "nodes: [\n")}, []string{"invalid lab spec"}},
		{"missing lab spec", nil, []string{"up", "--lab", filepath.Join(dir, "absent.yaml")}, []string{"lab spec"}},
		{"optout before up", nil, []string{"optout", l.gpuDriver, "dcgm-exporter"}, []string{"nvidia-dcgm-exporter not found"}},
	}
	before := l.state()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, l.gpuopsWith(context.Background(), nil, tc.global, tc.args...), tc.want...)
			diffState(t, tc.name, l.state(), before)
			diffFiles(t, tc.name, l.files(), map[string]string{})
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A GPU node too small for any operand pod: the pods stay Pending there.
func starved() testcluster.NodeOption { return testcluster.WithMemory("64Mi") }

func TestUpTimesOutNamingWhatDidNotSettle(t *testing.T) {
	l := newTestLab(t, starved())
	r := l.gpuops("up", "--timeout", "3s")
	wantError(t, r, "not settled after 3s", "DaemonSet nvidia-driver-daemonset 0/1", l.gpuNoDriver+" pod not scheduled")
	if !strings.Contains(r.stderr, "nvidia-driver-daemonset 0/1 ready\n") {
		t.Errorf("no progress line for the driver on stderr: %q", r.stderr)
	}
	for name := range l.files() {
		if strings.HasPrefix(name, "out/") {
			t.Errorf("%s written though up failed", name)
		}
	}
}

// A pod the scheduler could not place stays behind when its node stops
// asking for the operand: the DaemonSet controller does not remove a pod
// that is not bound to the node when the node changes (settle.StuckError).
// up must say so at once and name the pods, not wait until --timeout; once
// they are deleted, up settles.
func TestUpStopsAtPodsLeftBehind(t *testing.T) {
	l := newTestLab(t, starved())
	wantError(t, l.gpuops("up", "--timeout", "3s"), "not settled after 3s")
	// Let the controller finish with the other nodes, so that nothing but
	// the node change below is left to happen.
	for _, o := range operand.Lab {
		l.env.WaitForDaemonSet(t, l.ns, o.DaemonSet, func(ds *appsv1.DaemonSet) bool {
			s := ds.Status
			return s.ObservedGeneration == ds.Generation && s.CurrentNumberScheduled == s.DesiredNumberScheduled &&
				s.NumberReady == s.DesiredNumberScheduled-1
		})
	}
	l.env.WaitForPods(t, l.ns, func(pods []corev1.Pod) bool {
		return len(testcluster.PodsOn(pods, "")) == len(operand.Lab)
	})
	for o := range l.spec.Nodes[0].Operands {
		l.spec.Nodes[0].Operands[o] = false
	}
	l.writeSpec()

	// The stranded pods are named in the error; which ones they are is the
	// controller's business (it may replace a pending pod meanwhile). The
	// controller sometimes does remove them itself before up looks (a race
	// of its own): then up settles, and either way it never waits until
	// --timeout.
	r := l.gpuops("up", "--timeout", "10m")
	if r.code == 0 {
		left := l.env.WaitForPods(t, l.ns, func(pods []corev1.Pod) bool { return true })
		if n := len(testcluster.PodsOn(left, "")); n > 0 {
			t.Fatalf("up settled with %d pods never scheduled still there: %q", n, r.stderr)
		}
		t.Log("the DaemonSet controller removed the stranded pods itself; up settled")
		return
	}
	wantError(t, r, "will not settle", "kubectl -n "+l.ns+" delete pod",
		"was never scheduled and node "+l.gpuNoDriver+" no longer admits it")

	stranded := l.env.WaitForPods(t, l.ns, func(pods []corev1.Pod) bool { return true })
	for _, p := range testcluster.PodsOn(stranded, "") {
		err := l.env.Client.CoreV1().Pods(l.ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	l.mustGpuops("up")
}

// interruptOnWrite cancels a context at the first progress line.
type interruptOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *interruptOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

func TestUpInterrupted(t *testing.T) {
	l := newTestLab(t, starved())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := l.gpuopsWith(ctx, &interruptOnWrite{cancel: cancel}, nil, "up")
	wantError(t, r, "interrupted while waiting for DaemonSets to settle")
	for name := range l.files() {
		if strings.HasPrefix(name, "out/") {
			t.Errorf("%s written though up was interrupted", name)
		}
	}
}

func TestResetKeepsANamespaceItDidNotCreate(t *testing.T) {
	l := newTestLab(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.ns}}
	if _, err := l.env.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := l.mustGpuops("up")
	if strings.Contains(r.stdout, "namespace/") {
		t.Errorf("up reports a change to a namespace it found:\n%s", r.stdout)
	}
	l.mustGpuops("reset")
	s := l.state()
	if !s.NamespaceExists || len(s.DaemonSets) != 0 {
		t.Errorf("after reset: namespace exists %v, DaemonSets %v; want the namespace kept, empty", s.NamespaceExists, slices.Collect(maps.Keys(s.DaemonSets)))
	}
}
