// Package differential_test proves that the Go judges (gpuops audit,
// order-check) and the standalone scripts (operand-audit.sh, order-check.sh)
// print the same lines and exit with the same codes, over many generated
// states of a real control plane. The scripts judge every node of the
// cluster, so this package has a cluster of its own (the harness starts one
// per test binary) and its tests do not run in parallel.
package differential_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// Deploy label values to draw from; "missing" removes the label.
var labelValues = []string{"true", "true", "true", "false", "True", "", "pre-installed", "missing"}

// lab is the cluster state the test drives and what it expects of it.
type lab struct {
	env      *testcluster.Env
	nodes    []string
	labels   map[string]map[string]string // node → deploy label → value ("missing" absent)
	tainted  map[string]bool              // NoSchedule taint the DaemonSets do not tolerate
	starved  map[string]bool              // less memory than any operand pod requests
	handMade map[string]bool              // node → a pod with an operand's app label but no owner
}

func TestGoAndScriptsAgree(t *testing.T) {
	env := testcluster.New(t)
	env.Timeout = 30 * time.Second
	l := &lab{
		env: env, labels: map[string]map[string]string{},
		tainted: map[string]bool{}, starved: map[string]bool{}, handMade: map[string]bool{},
	}
	applyOperands(t, env)

	work := t.TempDir()
	gpuopstest.InstallScripts(t, work)
	bin := gpuopstest.Binary(t)
	goArgs := []string{"--kubeconfig", env.Kubeconfig, "-n", env.Namespace}
	scriptEnv := []string{"KUBECONFIG=" + env.Kubeconfig, "GPUOPS_NAMESPACE=" + env.Namespace}

	r := rand.New(rand.NewPCG(7, 11))
	// Names whose natural order differs from byte order; more come on the fly.
	for _, s := range []string{"2", "10", "02"} {
		l.addNode(t, s)
	}
	l.addNode(t, "tainted", testcluster.WithTaints(corev1.Taint{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}))
	l.addNode(t, "starved", testcluster.WithMemory("64Mi"))

	const lastRound = 7
	seen := map[string]bool{} // "command exit code" pairs met, to prove every verdict was compared
	for round := range lastRound + 1 {
		if round > 0 && round%3 == 0 {
			l.addNode(t, fmt.Sprint(round*11)) // a node added on the fly
		}
		for _, n := range l.nodes {
			l.relabel(t, r, n)
			if round == lastRound && (l.tainted[n] || l.starved[n]) {
				l.unask(t, n) // so that one audit finds nothing missing
			}
		}
		if round == 2 {
			l.addHandMadePod(t, l.nodes[0], operand.Lab.ContainerToolkit())
		}
		l.waitSettled(t)

		goAudit := gpuopstest.Run(t, nil, bin, append(goArgs, "audit")...)
		shAudit := gpuopstest.Run(t, scriptEnv, filepath.Join(work, "operand-audit.sh"))
		if goAudit != shAudit || goAudit.Stdout == "" {
			t.Fatalf("round %d: audit differs\ngpuops audit: exit %d\n%s%s\noperand-audit.sh: exit %d\n%s%s\nlabels: %v",
				round, goAudit.Code, goAudit.Stdout, goAudit.Stderr, shAudit.Code, shAudit.Stdout, shAudit.Stderr, l.labels)
		}
		for _, n := range append(slices.Clone(l.nodes), env.NodeName("absent")) {
			goOrder := gpuopstest.Run(t, nil, bin, append(goArgs, "order-check", n)...)
			shOrder := gpuopstest.Run(t, scriptEnv, filepath.Join(work, "order-check.sh"), n)
			if goOrder.Stdout != shOrder.Stdout || goOrder.Code != shOrder.Code {
				t.Fatalf("round %d: order-check %s differs\ngpuops: exit %d %q %s\norder-check.sh: exit %d %q %s\nlabels: %v",
					round, n, goOrder.Code, goOrder.Stdout, goOrder.Stderr, shOrder.Code, shOrder.Stdout, shOrder.Stderr, l.labels[n])
			}
			seen[fmt.Sprint("order-check ", goOrder.Code)] = true
		}
		seen[fmt.Sprint("audit ", goAudit.Code)] = true
		t.Logf("round %d: %d nodes, audit exit %d:\n%s", round, len(l.nodes), goAudit.Code, goAudit.Stdout)
	}
	for _, want := range []string{"audit 0", "audit 1", "order-check 0", "order-check 1", "order-check 2"} {
		if !seen[want] {
			t.Errorf("no round compared %q: the generated states are too tame", want)
		}
	}
}

// applyOperands creates the five rendered DaemonSets in the test's namespace.
func applyOperands(t *testing.T, env *testcluster.Env) {
	t.Helper()
	manifests, err := render.Operands(gpuops.Kustomize, operand.Lab, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(m.YAML, &ds); err != nil {
			t.Fatalf("%s: %v", m.Operand.Name, err)
		}
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(context.Background(), &ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (l *lab) addNode(t *testing.T, suffix string, opts ...testcluster.NodeOption) {
	t.Helper()
	name := l.env.NodeName(suffix)
	l.env.AddNode(t, name, nil, opts...)
	l.nodes = append(l.nodes, name)
	l.labels[name] = map[string]string{}
	probe := testcluster.FakeNode(name, nil)
	for _, o := range opts {
		o(probe)
	}
	l.tainted[name] = len(probe.Spec.Taints) > 0
	l.starved[name] = probe.Status.Allocatable.Memory().Cmp(resource.MustParse("128Mi")) < 0
}

// relabel gives each deploy label of the node a random value, or removes it.
func (l *lab) relabel(t *testing.T, r *rand.Rand, node string) {
	t.Helper()
	for _, o := range operand.Lab {
		v := labelValues[r.IntN(len(labelValues))]
		old, set := l.labels[node][o.LabelKey()]
		switch {
		case !set && v == "missing", set && v == old:
			continue
		case v == "missing":
			l.env.UnlabelNode(t, node, o.LabelKey())
			delete(l.labels[node], o.LabelKey())
		default:
			l.env.LabelNode(t, node, o.LabelKey(), v)
			l.labels[node][o.LabelKey()] = v
		}
	}
}

// unask sets every deploy label of the node to "false".
func (l *lab) unask(t *testing.T, node string) {
	t.Helper()
	for _, o := range operand.Lab {
		l.env.LabelNode(t, node, o.LabelKey(), "false")
		l.labels[node][o.LabelKey()] = "false"
	}
}

// addHandMadePod puts a pod with the operand's app label on the node, not
// controlled by its DaemonSet. (An orphan would not stay one: the DaemonSet
// adopts pods that match its selector, so this one has another controller.)
func (l *lab) addHandMadePod(t *testing.T, node string, o operand.Operand) {
	t.Helper()
	ctx := context.Background()
	owner, err := l.env.Client.CoreV1().ConfigMaps(l.env.Namespace).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: handMadeOwner}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            o.DaemonSet + "-hand-made",
			Labels:          map[string]string{"app": o.DaemonSet},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("ConfigMap"))},
		},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/fake:1"}},
		},
	}
	if _, err := l.env.Client.CoreV1().Pods(l.env.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.handMade[node] = true
}

const handMadeOwner = "hand-made-owner"

// waitSettled waits until the namespace holds exactly the pods the labels
// call for: one per node and operand asked for (deploy label "true") on an
// untainted node, Running, or Pending on the starved node; plus the
// hand-made pods, Running. Both judges then read the same, still state.
//
// One exception: the DaemonSet controller (v1.37) finds a node's pods by
// spec.nodeName when the node's labels change, so an unscheduled Pending pod
// outlives the label that called for it. Such a pod may stay.
func (l *lab) waitSettled(t *testing.T) {
	t.Helper()
	want := map[string]corev1.PodPhase{} // "node/controller" → phase
	mayLinger := map[string]bool{}       // "node/controller" of an unscheduled pod no longer asked for
	for _, n := range l.nodes {
		for _, o := range operand.Lab {
			key := n + "/" + o.DaemonSet
			v, set := l.labels[n][o.LabelKey()]
			switch {
			case !set || v != "true" || l.tainted[n]:
				mayLinger[key] = l.starved[n]
			case l.starved[n]:
				want[key] = corev1.PodPending
			default:
				want[key] = corev1.PodRunning
			}
		}
		if l.handMade[n] {
			want[n+"/"+handMadeOwner] = corev1.PodRunning
		}
	}
	var got map[string]corev1.PodPhase
	defer func() {
		if t.Failed() {
			t.Logf("pods wanted (node/controller: phase): %v\nlast seen: %v", want, got)
		}
	}()
	l.env.WaitForPods(t, l.env.Namespace, func(pods []corev1.Pod) bool {
		got = map[string]corev1.PodPhase{}
		for i := range pods {
			p := &pods[i]
			key := target(p) + "/" + controller(p)
			if _, dup := got[key]; dup || p.DeletionTimestamp != nil {
				return false
			}
			got[key] = p.Status.Phase
		}
		for k, phase := range got {
			if want[k] != phase && !(mayLinger[k] && phase == corev1.PodPending) {
				return false
			}
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				return false
			}
		}
		return true
	})
}

// target is the node a pod is bound to or, while unscheduled, the node its
// DaemonSet aimed it at (the controller pins it with node affinity).
func target(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

func controller(p *corev1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.Name
	}
	return ""
}
