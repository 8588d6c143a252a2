// Package e2e_test runs the lab end to end, as `task lab` does, on a cluster
// of its own: the built gpuops binary runs the lab's steps 1 to 8, and every file
// it leaves is compared with docs/lab.md.
package e2e_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// specOut is the out/ files that docs/lab.md lists, byte for byte: the code
// block of its section "The files it leaves, exactly", where each file is its
// name (out/<file>) and its lines, files parted by a blank line. The page is
// the lab's spec, so the test reads it rather than a copy.
var specOut = func() map[string]string {
	doc, err := os.ReadFile("../../docs/lab.md")
	if err != nil {
		panic(err)
	}
	_, section, _ := strings.Cut(string(doc), "## The files it leaves, exactly\n\n```\n")
	block, _, _ := strings.Cut(section, "```")
	out := map[string]string{}
	for _, file := range strings.Split(strings.TrimSpace(block), "\n\n") {
		name, body, _ := strings.Cut(file, "\n")
		out[strings.TrimPrefix(name, "out/")] = body + "\n"
	}
	return out
}()

// The page lists six files, and they say what the lab is.
func TestSpecOutIsRead(t *testing.T) {
	want := []string{"audit.txt", "driver.txt", "matrix.txt", "optout.txt", "order.txt", "roster.txt"}
	if got := slices.Sorted(maps.Keys(specOut)); !slices.Equal(got, want) {
		t.Fatalf("docs/lab.md lists %q, want %q", got, want)
	}
	if !strings.HasSuffix(specOut["matrix.txt"], "TOTAL_PODS=9\n") || specOut["optout.txt"] != "BEFORE=2\nAFTER=1\n" {
		t.Errorf("docs/lab.md's files read wrong: %q", specOut)
	}
}

func TestLab(t *testing.T) {
	env := testcluster.New(t)
	lab, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	// The lab's nodes as hack/cluster.sh makes them: no GPU labels, and as
	// many GPUs advertised as the spec's gpus: says (none on the node without).
	for _, n := range lab.Nodes {
		var gpus []testcluster.NodeOption
		if n.GPUs > 0 {
			gpus = append(gpus, testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: *resource.NewQuantity(n.GPUs, resource.DecimalSI)}))
		}
		env.AddNode(t, n.Name, nil, gpus...)
	}
	// The lab's own namespace, as a user runs it: no -n.
	cluster := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig}
	work := t.TempDir()
	runLab := func(what string) map[string]string {
		t.Helper()
		res := cluster.Want(t, 0, "lab", "--workdir", work)
		if !strings.HasSuffix(res.Stdout, specOut["matrix.txt"]) {
			t.Errorf("%s: gpuops lab must end by printing the matrix; stdout:\n%s", what, res.Stdout)
		}
		return gpuopstest.ReadDir(t, filepath.Join(work, "out"))
	}

	first := runLab("first run")
	for name, want := range specOut {
		if first[name] != want {
			t.Errorf("out/%s:\n%s\ndocs/lab.md:\n%s", name, first[name], want)
		}
	}
	if len(first) != len(specOut) {
		t.Errorf("out/ holds %d files, want exactly the %d of docs/lab.md", len(first), len(specOut))
	}
	var manifests []string
	for _, o := range operand.Lab {
		manifests = append(manifests, o.Manifest)
	}
	slices.Sort(manifests)
	if got := keys(gpuopstest.ReadDir(t, filepath.Join(work, "k8s"))); !slices.Equal(got, manifests) {
		t.Errorf("k8s/ holds %v, want %v", got, manifests)
	}

	// The scripts stand at the workspace root, executable, and print what
	// the Go commands print.
	scriptEnv := []string{"KUBECONFIG=" + env.Kubeconfig}
	for _, s := range []string{"operand-audit.sh", "order-check.sh"} {
		fi, err := os.Stat(filepath.Join(work, s))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&0o111 != 0o111 {
			t.Errorf("%s: mode %v, want executable", s, fi.Mode())
		}
	}
	audit := gpuopstest.Run(t, scriptEnv, filepath.Join(work, "operand-audit.sh"))
	if goAudit := cluster.Run(t, "audit"); audit != goAudit || audit.Stdout != specOut["audit.txt"] {
		t.Errorf("operand-audit.sh: exit %d\n%s%s\ngpuops audit: exit %d\n%s%s", audit.Code, audit.Stdout, audit.Stderr,
			goAudit.Code, goAudit.Stdout, goAudit.Stderr)
	}
	var order strings.Builder
	for _, n := range lab.Nodes {
		sh := gpuopstest.Run(t, scriptEnv, filepath.Join(work, "order-check.sh"), n.Name)
		if goOrder := cluster.Run(t, "order-check", n.Name); sh != goOrder {
			t.Errorf("order-check.sh %s: exit %d %q %s; gpuops order-check: exit %d %q %s", n.Name,
				sh.Code, sh.Stdout, sh.Stderr, goOrder.Code, goOrder.Stdout, goOrder.Stderr)
		}
		order.WriteString(n.Name + " " + sh.Stdout)
	}
	if order.String() != specOut["order.txt"] {
		t.Errorf("order-check.sh on the lab's nodes:\n%s\ndocs/lab.md:\n%s", order.String(), specOut["order.txt"])
	}
	if m := cluster.Run(t, "matrix"); m.Stdout != specOut["matrix.txt"] || m.Code != 0 {
		t.Errorf("gpuops matrix: exit %d\n%s%s", m.Code, m.Stdout, m.Stderr)
	}

	// Again on the lab as it stands, then after reset: the same out/.
	if again := runLab("second run"); !maps.Equal(again, first) {
		t.Errorf("second run changed out/:\n%v\nfirst:\n%v", again, first)
	}
	cluster.Want(t, 0, "reset")
	if afterReset := runLab("run after reset"); !maps.Equal(afterReset, first) {
		t.Errorf("run after reset changed out/:\n%v\nfirst:\n%v", afterReset, first)
	}

	// Every judge in every format, on the lab as it leaves it.
	t.Run("golden", func(t *testing.T) {
		gpuopstest.CheckGolden(t, gpuopstest.Cluster{Kubeconfig: gpuopstest.ManyContexts(t, env.Kubeconfig)}, "testdata/golden",
			gpuopstest.Volatile{env.RESTConfig.Host: "<server>"}, gpuopstest.JudgeCases(lab.Nodes[len(lab.Nodes)-1].Name))
	})
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
