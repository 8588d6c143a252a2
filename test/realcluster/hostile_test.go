package realcluster_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
)

// Bad input to every command ends in one error line and exit 2, and changes
// nothing: not the cluster, not the workspace. (Unknown operands of
// optout/optin, missing nodes of up and a lab spec with unknown operands are
// the provisioning tests' cases in cmd/gpuops; a server that stops answering
// is test/faults'.)
func TestHostileInput(t *testing.T) {
	env := testcluster.New(t)
	node := env.NodeName("gpu")
	env.AddNode(t, node, map[string]string{operand.Lab.ContainerToolkit().LabelKey(): "true"})
	create(t, env, operands(t, env))
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool { return len(testcluster.PodsOn(pods, node)) == 1 })

	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		gpuopstest.WriteFile(t, p, content)
		return p
	}
	work := t.TempDir()
	gpuopstest.WriteFile(t, filepath.Join(work, "out.keep"), "left by an earlier run\n")
	lab := func(name, nodes string) string {
		return file(name, "namespace: "+env.Namespace+"\nnodes:\n"+nodes)
	}
	kc := env.Kubeconfig
	absent := env.NodeName("absent")

	for _, tc := range []struct {
		name string
		args []string // after the global flags
		want string
	}{
		{"order-check on a node that does not exist", []string{"order-check", absent}, `node "` + absent + `" not found`},
		{"order-check --all-rules --discover on a node that does not exist", []string{"order-check", "--all-rules", "--discover", absent}, "not found"},
		{"order-check on an invalid node name", []string{"order-check", "Not_A_Node"}, `invalid node name "Not_A_Node"`},
		{"optout on an invalid node name", []string{"optout", "../" + node, "driver"}, `invalid node name "../` + node + `"`},
		{"optin on an invalid node name", []string{"optin", "", "driver"}, `invalid node name ""`},
		{"order-check with two nodes", []string{"order-check", node, node}, "want exactly one NODE"},
		{"matrix with an argument", []string{"matrix", node}, "unexpected arguments"},
		{"audit with a bad selector", []string{"audit", "-l", "!!"}, "--selector"},
		{"audit with an unknown output", []string{"audit", "-o", "xml"}, `unknown output format "xml"`},
		{"unknown command", []string{"audtI"}, "audtI"},
		{"unknown flag", []string{"matrix", "--explain"}, "flag provided but not defined"},
		{"lab spec with a duplicate node", []string{"up", "--workdir", work, "--lab", lab("dup.yaml", "- name: "+node+"\n- name: "+node+"\n")}, "is listed twice"},
		{"lab spec with yes for true", []string{"up", "--workdir", work, "--lab", lab("yes.yaml", "- name: "+node+"\n  operands: {driver: yes}\n")}, `operand driver: value "yes" is not true or false`},
		{"lab spec with an empty value", []string{"up", "--workdir", work, "--lab", lab("empty.yaml", "- name: "+node+"\n  operands: {driver: }\n")}, `value "" is not true or false`},
		{"lab spec with a string value", []string{"up", "--workdir", work, "--lab", lab("str.yaml", "- name: "+node+"\n  operands: {driver: \"false\"}\n")}, "invalid lab spec"},
		{"lab spec with an invalid node name", []string{"up", "--workdir", work, "--lab", lab("name.yaml", "- name: Node_1\n")}, `node name "Node_1"`},
		{"lab spec naming an unknown operand in optout", []string{"up", "--workdir", work, "--lab", lab("optout.yaml", "- name: "+node+"\noptout: {node: "+node+", operand: mig}\n")}, `unknown operand "mig"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := clusterState(t, env, node)
			gpuopstest.Cluster{Kubeconfig: kc, Namespace: env.Namespace}.WantError(t, tc.want, tc.args...)
			if after := clusterState(t, env, node); !reflect.DeepEqual(before, after) {
				t.Errorf("the cluster changed:\nbefore %v\nafter  %v", before, after)
			}
			unchanged(t, work, map[string]string{"out.keep": "left by an earlier run\n"})
		})
	}

	// Connection settings: the kubeconfig and its context.
	refusing := refusingKubeconfig(t, env, filepath.Join(dir, "refusing"))
	empty := file("empty", "")
	broken := file("broken", "apiVersion: v1\nkind: Config\nclusters: [oops\n")
	for _, tc := range []struct {
		name   string
		env    []string
		global []string
		want   string
	}{
		{"missing kubeconfig", nil, []string{"--kubeconfig", filepath.Join(dir, "absent")}, "kubeconfig: stat"},
		{"empty kubeconfig", nil, []string{"--kubeconfig", empty}, "kubeconfig: no cluster configured in " + empty},
		{"broken kubeconfig", nil, []string{"--kubeconfig", broken}, "kubeconfig: error loading config file"},
		{"KUBECONFIG pointing nowhere", []string{"KUBECONFIG=" + filepath.Join(dir, "nowhere")}, nil, "kubeconfig: no cluster configured in " + filepath.Join(dir, "nowhere")},
		{"context that does not exist", nil, []string{"--kubeconfig", kc, "--context", "nope"}, `context "nope" does not exist`},
		{"API server refusing connections", nil, []string{"--kubeconfig", refusing}, "connection refused"},
	} {
		for _, args := range [][]string{{"audit"}, {"matrix", "--discover"}, {"order-check", node}, {"up", "--workdir", work}, {"optout", node, "driver"}, {"reset"}} {
			t.Run(tc.name+"/"+args[0], func(t *testing.T) {
				before := clusterState(t, env, node)
				c := gpuopstest.Cluster{Namespace: env.Namespace, Env: append([]string{"KUBECONFIG="}, tc.env...)}
				c.WantError(t, tc.want, append(slices.Clone(tc.global), args...)...)
				if after := clusterState(t, env, node); !reflect.DeepEqual(before, after) {
					t.Errorf("the cluster changed:\nbefore %v\nafter  %v", before, after)
				}
				unchanged(t, work, map[string]string{"out.keep": "left by an earlier run\n"})
			})
		}
	}
}

// unchanged checks that dir holds exactly the given files.
func unchanged(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("workspace %v, want %v", got, want)
	}
}

// refusingKubeconfig copies env's kubeconfig with its server moved to a port
// where nothing listens.
func refusingKubeconfig(t *testing.T, env *testcluster.Env, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
