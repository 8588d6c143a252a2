package gpuopstest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/kube"
)

// Cluster is where a test points gpuops, as a user does with --kubeconfig
// and -n ahead of the command.
type Cluster struct {
	Kubeconfig string   // empty: none given (KUBECONFIG in Env, or none at all)
	Namespace  string   // empty: the kubeconfig's
	Env        []string // more environment variables, KEY=VALUE
}

// On is the test cluster of env, in env's namespace.
func On(env *testcluster.Env) Cluster {
	return Cluster{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace}
}

// Args are the command line of a run of args against the cluster.
func (c Cluster) Args(args ...string) []string {
	var out []string
	if c.Kubeconfig != "" {
		out = append(out, "--kubeconfig", c.Kubeconfig)
	}
	if c.Namespace != "" {
		out = append(out, "-n", c.Namespace)
	}
	return append(out, args...)
}

// Run runs gpuops against the cluster (Run).
func (c Cluster) Run(t testing.TB, args ...string) Output {
	t.Helper()
	return Run(t, c.Env, Binary(t), c.Args(args...)...)
}

// Want runs gpuops against the cluster and stops the test unless it exits
// with code, showing what it printed.
func (c Cluster) Want(t testing.TB, code int, args ...string) Output {
	t.Helper()
	r := c.Run(t, args...)
	if r.Code != code {
		t.Fatalf("gpuops %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

// SameFrom runs args against c and, with no cluster, with --from each of
// from, and fails where one prints or exits otherwise, compared as v makes
// two runs comparable (the clock's instants and ages aside: the live run is
// later). missing, if not nil, picks the lines of --from's left out: what
// an input says it does not hold.
func (c Cluster) SameFrom(t testing.TB, args []string, v Volatile, missing func(line string) bool, from ...string) {
	t.Helper()
	live := c.Run(t, args...)
	for _, f := range from {
		if got := RunFrom(t, args, f); !v.Same(args, live, got, missing) {
			notLive(t, args, filepath.Base(f), "", got, live)
		}
	}
}

// RunFrom runs gpuops args --from input, with no cluster.
func RunFrom(t testing.TB, args []string, input string) Output {
	t.Helper()
	return Run(t, nil, Binary(t), append(slices.Clone(args), "--from", input)...)
}

// RunFrom runs gpuops args --from input, with no cluster, in c's
// namespace: an input without a header (kubectl's, must-gather's) does not
// name the GPU Operator's, which the user then does with -n.
func (c Cluster) RunFrom(t testing.TB, args []string, input string) Output {
	t.Helper()
	if c.Namespace != "" {
		args = append([]string{"-n", c.Namespace}, args...)
	}
	return RunFrom(t, args, input)
}

// dropStrings is the JSON or YAML output out (-o json|yaml in args) with
// every string drop picks deleted from its lists, and every list left
// empty deleted, as JSON: a note is an item of a list, which a line may
// not hold whole (YAML folds it) and whose neighbours' commas it changes.
func dropStrings(args []string, out string, drop func(string) bool) (string, bool) {
	i := slices.Index(args, "-o")
	if i < 0 || i+1 == len(args) || args[i+1] != "json" && args[i+1] != "yaml" {
		return "", false
	}
	raw, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		return "", false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return "", false
	}
	var walk func(v any) (any, bool) // the value, and whether to keep it
	walk = func(v any) (any, bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if x, ok := walk(x); ok {
					v[k] = x
				} else {
					delete(v, k)
				}
			}
		case []any:
			kept := v[:0]
			for _, x := range v {
				if str, ok := x.(string); ok && drop(str) {
					continue
				}
				x, _ = walk(x)
				kept = append(kept, x)
			}
			return kept, len(kept) > 0
		}
		return v, true
	}
	v, _ = walk(v)
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n", err == nil
}

// notLive fails for a run of args --from what that did not print as the
// live one did (and why, if more is to be said), showing both.
func notLive(t testing.TB, args []string, what, why string, from, live Output) {
	t.Helper()
	t.Errorf("gpuops %s --from %s: exit %d, live %d%s\n--- from\n%s%s\n--- live\n%s%s", strings.Join(args, " "), what,
		from.Code, live.Code, why, from.Stdout, from.Stderr, live.Stdout, live.Stderr)
}

// Same reports whether a run of args with --from printed and exited as the
// live one, compared as v makes two runs comparable, the lines missing
// picks (if not nil) left out of both.
func (v Volatile) Same(args []string, live, from Output, missing func(line string) bool) bool {
	keep := func(s string, stdout bool) string {
		if missing == nil {
			return s
		}
		if stdout { // stderr's notes are lines
			if out, ok := dropStrings(args, s, missing); ok {
				return out
			}
		}
		return strings.Join(slices.DeleteFunc(strings.SplitAfter(s, "\n"), missing), "")
	}
	comparable := func(o Output) string { return v.Comparable(args, keep(o.Stdout, true)+"\x00"+keep(o.Stderr, false)) }
	return from.Code == live.Code && comparable(from) == comparable(live)
}

// WantError runs gpuops against the cluster and checks that it fails as a
// command that cannot do its work does (OneLineError).
func (c Cluster) WantError(t testing.TB, want string, args ...string) {
	t.Helper()
	c.Run(t, args...).OneLineError(t, want)
}

// Command is gpuops against the cluster as a process the test starts and
// stops itself (a watch, a server).
func (c Cluster) Command(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(Binary(t), c.Args(args...)...)
	cmd.Env = append(os.Environ(), c.Env...)
	return cmd
}

// OneLineError checks the contract of a failed command: exit 2, nothing on
// stdout, and one line on stderr, "error: " and then a message containing
// want: no stack trace, no library logging.
func (r Output) OneLineError(t testing.TB, want string) {
	t.Helper()
	if r.Code != 2 || r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "error: ") || !strings.Contains(r.Stderr, want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, one line 'error: …%s…'", r.Code, r.Stdout, r.Stderr, want)
	}
}

// Kubectl runs kubectl (the lab's, on PATH) against the cluster, for a run
// the test expects may fail (a webhook's refusal); testcluster's
// Env.Kubectl is the one for runs that must succeed.
func (c Cluster) Kubectl(t testing.TB, args ...string) Output {
	t.Helper()
	return Run(t, c.Env, "kubectl", c.Args(args...)...)
}

// FromIsLive checks --from against the live cluster on each case, from
// every input a user may send (issue #55's differential): a bundle of
// gpuops collect prints what the live run prints; kubectl's output of the
// same objects, one List and a folder of a file per kind, too (KubectlDump);
// a must-gather folder (MustGather) the verdicts it can hold, and names the
// rest as missing. A pod that asks no GPU, outside the GPU Operator's
// namespace (NoGPUPod), is there meanwhile, and why, pods and capacity
// are judged with it: a bundle keeps of it only what why reads.
func (c Cluster) FromIsLive(t testing.TB, cases []Golden) {
	t.Helper()
	dir := t.TempDir()
	pod := c.NoGPUPod(t, dir)
	defer c.Kubectl(t, "delete", "pod", "-n", metav1.NamespaceDefault, pod, "--wait=false")
	operator := cmp.Or(c.Namespace, kube.DefaultNamespace)
	for _, cmd := range [][]string{{"why", pod}, {"pods"}} { // -n: the pods' namespace
		cases = append(slices.Clip(cases), Golden{Args: append(cmd, "--operator-namespace", operator, "-n", metav1.NamespaceDefault)})
	}
	cases = append(cases, Golden{Args: []string{"capacity"}})
	bundle := filepath.Join(dir, "bundle.yaml")
	c.Want(t, 0, "collect", "-o", bundle)
	dump := c.KubectlDump(t, filepath.Join(dir, "dump"))
	mustGather := c.MustGather(t, filepath.Join(dir, "must-gather"))
	for _, g := range cases {
		live := c.Run(t, g.Args...)
		from := map[string]Output{"bundle": RunFrom(t, g.Args, bundle), "kubectl's List": c.RunFrom(t, g.Args, dump.List),
			"kubectl's folder": c.RunFrom(t, g.Args, dump.Folder)}
		for what, got := range from {
			v, missing := Volatile{}, (func(string) bool)(nil)
			if what != "bundle" {
				v, missing = dump.Volatile, dump.NotHeld
			}
			if !v.Same(g.Args, live, got, missing) {
				notLive(t, g.Args, what, "", got, live)
			}
		}
		mustGather.Check(t, c, g.Args, live)
	}
}

// NoGPUPod makes a pod that asks no GPU in namespace default, held back
// from the scheduler by a scheduling gate, so that it stays Pending as it
// is while the runs are compared, and returns its name.
func (c Cluster) NoGPUPod(t testing.TB, dir string) string {
	t.Helper()
	manifest := filepath.Join(dir, "no-gpu.yaml")
	WriteFile(t, manifest, `{"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "no-gpu-"},
 "spec": {"schedulingGates": [{"name": "gpuops.io/test"}], "containers": [{"name": "web", "image": "registry.example/web:1"}]}}`)
	r := c.Kubectl(t, "create", "-n", metav1.NamespaceDefault, "-f", manifest, "-o", "name")
	if r.Code != 0 {
		t.Fatalf("kubectl create a pod that asks no GPU: %s", r.Stderr)
	}
	return strings.TrimPrefix(strings.TrimSpace(r.Stdout), "pod/")
}

// Dump is kubectl's output of the objects gpuops reads, as a user who
// cannot run gpuops against the cluster sends it.
type Dump struct {
	List   string // one `kubectl get KIND,KIND,… -A -o yaml --show-managed-fields`
	Folder string // a `kubectl get KIND -A -o json --show-managed-fields` file per kind
	// Volatile makes a run of it comparable with the live one: a kubectl
	// output names no cluster, so that a report names it by the input's
	// name, and no server.
	Volatile Volatile
	// held are the namespaces ("" for a cluster-scoped kind) each kind
	// the cluster serves has objects in, by its Qualified name: a kubectl
	// output without a header cannot tell "none" from "not dumped", so
	// that --from says it does not hold the others.
	held map[string]map[string]bool
}

// notHeldLine is how --from says an input does not hold a kind (in a
// namespace): "note: --from DUMP holds no KIND", "the input holds no KIND in
// namespace NS"; and the live run that the cluster does not serve one.
var notHeldLine = regexp.MustCompile(` (holds no|does not serve) ([a-z0-9.]+)(?: in namespace ([a-z0-9-]+))?`)

// NotHeld picks the lines by which --from says the dump does not hold a
// kind (in a namespace) it has no object of, and those by which the live
// run says the cluster does not serve it: the one way their runs may
// differ.
func (d Dump) NotHeld(line string) bool {
	m := notHeldLine.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	nss, served := d.held[m[2]]
	return !served || m[1] == "holds no" && (len(nss) == 0 || m[3] != "" && !nss[m[3]])
}

// KubectlDump writes kubectl's output of every kind gpuops reads
// (bundle.Kinds) that the cluster serves, of every namespace, into dir.
func (c Cluster) KubectlDump(t testing.TB, dir string) Dump {
	t.Helper()
	d := Dump{List: filepath.Join(dir, "dump.yaml"), Folder: filepath.Join(dir, "dump-folder"), held: map[string]map[string]bool{}}
	var served []string
	for _, k := range bundle.Kinds {
		// as the guide asks: the nodes' managedFields say who wrote a
		// label and when
		r := c.Kubectl(t, "get", k.Qualified(), "-A", "-o", "json", "--show-managed-fields")
		if r.Code != 0 { // not served: nothing to dump
			continue
		}
		served = append(served, k.Qualified())
		WriteFile(t, filepath.Join(d.Folder, k.Resource+".json"), r.Stdout)
		var list struct {
			Items []struct{ Metadata struct{ Namespace string } }
		}
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
			t.Fatalf("kubectl get %s: %v", k.Qualified(), err)
		}
		d.held[k.Qualified()] = map[string]bool{}
		for _, o := range list.Items {
			d.held[k.Qualified()][o.Metadata.Namespace] = true
		}
	}
	list := c.Kubectl(t, "get", strings.Join(served, ","), "-A", "-o", "yaml", "--show-managed-fields")
	if list.Code != 0 {
		t.Fatalf("kubectl get %s: %s", strings.Join(served, ","), list.Stderr)
	}
	WriteFile(t, d.List, list.Stdout)
	d.Volatile = Volatile{c.server(t): "", filepath.Base(d.List): "<cluster>", filepath.Base(d.Folder): "<cluster>"}
	return d
}

// MustGather is a folder as NVIDIA's must-gather leaves it, with the file
// names and layout its script writes on a cluster it runs to the end on
// (NVIDIA/gpu-operator v26.7.0 hack/must-gather.sh): of what gpuops reads,
// the ClusterPolicy as YAML (or cluster_policy.missing), the NVIDIADrivers,
// the operator's pod and the namespace's pods and DaemonSets; the GPU nodes
// only as text (their labels, `get -o wide`, `describe`), which gpuops does
// not parse; logs.
type MustGather struct {
	Dir string
	// WithNodes is the same folder with `kubectl get nodes -o yaml` added,
	// as the troubleshooting guide asks of a user who sends one.
	WithNodes string
	v         Volatile
}

// MustGather writes the folder, and the one with the nodes, under dir; the
// GPU Operator's namespace is c's.
func (c Cluster) MustGather(t testing.TB, dir string) MustGather {
	t.Helper()
	m := MustGather{Dir: filepath.Join(dir, "must-gather"), WithNodes: filepath.Join(dir, "with-nodes", "must-gather")}
	if c.Namespace == "" { // the judges' default, as must-gather finds it by the operator's pod
		c.Namespace = kube.DefaultNamespace
	}
	files := map[string]string{"must-gather.log": "#\n# All done!\n#\n"}
	kubectl := func(args ...string) string {
		r := c.Kubectl(t, args...)
		if r.Code != 0 && !strings.Contains(r.Stderr, "the server doesn't have a resource type") {
			t.Fatalf("kubectl %s: %s", strings.Join(args, " "), r.Stderr)
		}
		return r.Stdout
	}
	if names := strings.Fields(kubectl("get", "clusterpolicies.nvidia.com", "-o", "name")); len(names) > 0 {
		files["cluster_policy.yaml"] = kubectl(append([]string{"get", "-o", "yaml"}, names...)...)
	} else {
		files["cluster_policy.missing"] = ""
	}
	if kubectl("get", "nvidiadrivers.nvidia.com", "-A", "-o", "name") != "" {
		files["nvidiadrivers.yaml"] = kubectl("get", "nvidiadrivers.nvidia.com", "-A", "-o", "yaml")
	}
	gpuNodes := "-l=nvidia.com/gpu.present=true"
	for _, name := range strings.Fields(kubectl("get", "nodes", gpuNodes, "-o", "name")) {
		files["gpu_nodes.labels"] += strings.TrimPrefix(name, "node/") + "\n- " + kubectl("get", name, "-o", "jsonpath={.metadata.labels}") + "\n\n"
	}
	files["gpu_nodes.status"] = kubectl("get", "nodes", gpuNodes, "-o", "wide")
	files["gpu_nodes.descr"] = kubectl("describe", "nodes", gpuNodes)
	if operator := strings.Fields(kubectl("get", "pods", "-l=app=gpu-operator", "-o", "name")); len(operator) > 0 {
		files["gpu_operator_pod.status"] = kubectl("get", operator[0], "-o", "wide")
		files["gpu_operator_pod.yaml"] = kubectl("get", operator[0], "-o", "yaml")
	}
	files["gpu_operand_pods.status"] = kubectl("get", "pods", "-o", "wide")
	files["gpu_operand_pods.yaml"] = kubectl("get", "pods", "-o", "yaml")
	files["gpu_operand_ds.status"] = kubectl("get", "ds")
	files["gpu_operand_ds.yaml"] = kubectl("get", "ds", "-o", "yaml")
	for name, content := range files {
		WriteFile(t, filepath.Join(m.Dir, name), content)
		WriteFile(t, filepath.Join(m.WithNodes, name), content)
	}
	WriteFile(t, filepath.Join(m.WithNodes, "nodes.yaml"), kubectl("get", "nodes", "-o", "yaml"))
	m.v = Volatile{c.server(t): "", "must-gather": "<cluster>"}
	return m
}

// notHeld picks the lines by which --from says what the folder lacks
// (stderr's notes, the judges' notes).
func notHeld(line string) bool { return strings.Contains(line, " holds no ") }

// Check compares a run of args from the folder with the live run: alone,
// it holds no node (nor the pods of another namespace), and no judge gives
// a verdict (exit 2, saying what it lacks); with
// the nodes, a judge prints what it prints live, or names what the
// folder lacks.
func (m MustGather) Check(t testing.TB, c Cluster, args []string, live Output) {
	t.Helper()
	// a command line refused is refused whatever the input
	if alone := c.RunFrom(t, args, m.Dir); !m.v.Same(args, live, alone, nil) {
		alone.OneLineError(t, ": no verdict can be given without it")
	}
	got := c.RunFrom(t, args, m.WithNodes)
	if m.v.Same(args, live, got, notHeld) {
		return
	}
	if !strings.Contains(got.Stderr, " holds no ") {
		notLive(t, args, "must-gather", ", and names nothing missing", got, live)
	}
}

// server is the API server's address the kubeconfig's context names: a
// run --from an input that does not name it prints none.
func (c Cluster) server(t testing.TB) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
}
