// Package collect_test proves that `gpuops collect` and --from judge as
// the live cluster does: every judge, in every format, prints from a
// bundle, from kubectl's own output of the same objects and from a
// must-gather-shaped folder what it prints live, on the lab's real control
// plane; and that bad inputs, redaction and missing rights are said.
package collect_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// lab is the lab after `gpuops lab` (its node without a GPU breaks the start-up order)
// with a GPU pod of another namespace bound there, stuck.
type lab struct {
	env     *testcluster.Env
	cluster gpuopstest.Cluster
	nodes   []string
	team    string // the GPU pod's namespace
	pods    []string
	owners  []string // the ReplicaSets of the team's pods
}

func newLab(t *testing.T) *lab {
	env := testcluster.New(t)
	spec, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{env: env, cluster: gpuopstest.Cluster{Kubeconfig: env.Kubeconfig}}
	for _, n := range spec.Nodes { // as test/e2e makes them: the spec's GPUs advertised
		var gpus []testcluster.NodeOption
		if n.GPUs > 0 {
			gpus = append(gpus, testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: *resource.NewQuantity(n.GPUs, resource.DecimalSI)}))
		}
		env.AddNode(t, n.Name, nil, gpus...)
		l.nodes = append(l.nodes, n.Name)
	}
	l.cluster.Want(t, 0, "lab", "--workdir", t.TempDir())
	l.team = env.OtherNamespace(t, "team")
	pod := testcluster.GPUPod("train-1", l.nodes[2], 8)
	if _, err := env.Client.CoreV1().Pods(l.team).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Deployment asking no GPU: why deployment/web finds its pod through
	// its ReplicaSet, from a bundle as live.
	one, web := int32(1), map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: web}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: web},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}}}
	if _, err := env.Client.AppsV1().Deployments(l.team).Create(context.Background(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitForPods(t, l.team, func(pods []corev1.Pod) bool {
		return slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Labels["app"] == "web" && p.Spec.NodeName != "" })
	})
	sets, err := env.Client.AppsV1().ReplicaSets(l.team).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets.Items {
		l.owners = append(l.owners, rs.Name)
	}
	pods, err := env.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		l.pods = append(l.pods, p.Name)
	}
	return l
}

// cases are every judge in every format (the golden cases of one
// cluster), and the workload's commands.
func cases(node, team string) []gpuopstest.Golden {
	more := [][]string{{"why", "-n", team, "train-1"}, {"why", "-n", team, "deployment/web"}, {"pods"}, {"pods", "-n", team}, {"capacity"}, {"health", "--explain", node}}
	out := gpuopstest.FromCases(node)
	for _, args := range more {
		out = append(out, gpuopstest.Golden{Args: args})
	}
	return out
}

// One lab for every part: its node names are the lab spec's. First as
// `gpuops lab` leaves it, then as a GPU Operator install: a ClusterPolicy
// naming the sharing and MIG ConfigMaps, the operator's Deployment, a
// DeviceClass and a ResourceClaim, so that kubectl's output holds every
// kind the judges read.
func TestCollect(t *testing.T) {
	l := newLab(t)
	t.Run("from is live", l.fromIsLive)
	t.Run("redact", l.redact)
	t.Run("bad inputs", l.badInputs)
	l.install(t)
	t.Run("install: from is live", l.fromIsLive)
	t.Run("install: redact", l.redact)
}

// install makes the lab a GPU Operator install.
func (l *lab) install(t *testing.T) {
	ctx := context.Background()
	const ns = "gpu-operator"
	dyn, err := dynamic.NewForConfig(l.env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	in, err := rehearsal.InstallPolicy(ctx, dyn, rehearsal.Policy("cluster-policy", rehearsal.OfferSpec("sharing", "mig")), ns, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Remove(context.Background()) })
	for _, cm := range []*corev1.ConfigMap{rehearsal.SharingConfigs(ns), rehearsal.MIGConfigs(ns)} {
		if _, err := l.env.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app.kubernetes.io/component": "gpu-operator", "app": "gpu-operator"}
	operator := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gpu-operator", Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "gpu-operator", Image: "nvcr.io/nvidia/gpu-operator:v26.7.0",
				Env: []corev1.EnvVar{{Name: "SECRET_TOKEN", Value: "not-in-the-bundle"}}}}}}}}
	if _, err := l.env.Client.AppsV1().Deployments(ns).Create(ctx, operator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == 'gpu.nvidia.com'"}}}}}
	if _, err := l.env.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.env.Client.ResourceV1().DeviceClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class.Name}}}}}}
	if _, err := l.env.Client.ResourceV1().ResourceClaims(l.team).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.env.WaitForPods(t, ns, func(pods []corev1.Pod) bool {
		return slices.ContainsFunc(pods, func(p corev1.Pod) bool {
			return p.Labels["app"] == "gpu-operator" && p.Status.Phase == corev1.PodRunning
		})
	})
}

// fromIsLive compares every judge in every format live and from every
// input (gpuopstest.FromIsLive: a YAML bundle, kubectl's output, a
// must-gather folder), and from a gzipped JSON bundle, stdin and a later
// --now.
func (l *lab) fromIsLive(t *testing.T) {
	cs := cases(l.nodes[2], l.team)
	l.cluster.FromIsLive(t, cs)
	dir := t.TempDir()
	yamlBundle, jsonBundle := filepath.Join(dir, "bundle.yaml"), filepath.Join(dir, "bundle.json.gz")
	l.cluster.Want(t, 0, "collect", "-o", yamlBundle)
	l.cluster.Want(t, 0, "collect", "-o", jsonBundle)
	if raw, _ := os.ReadFile(yamlBundle); bytes.Contains(raw, []byte("not-in-the-bundle")) || bytes.Contains(raw, []byte("kind: Secret")) {
		t.Errorf("the bundle holds a container's environment or a Secret")
	}
	for _, c := range cs {
		l.cluster.SameFrom(t, c.Args, gpuopstest.Volatile{}, nil, jsonBundle)
	}
	// stdin, and a later --now: the pod then stuck longer
	in := gpuopstest.Run(t, nil, "sh", "-c", gpuopstest.Binary(t)+" health -o json --from - < "+yamlBundle)
	if live := l.cluster.Run(t, "health", "-o", "json"); in.Code != live.Code || in.Stdout == "" {
		t.Errorf("--from -: exit %d, live %d\n%s%s", in.Code, live.Code, in.Stdout, in.Stderr)
	}
	later := gpuopstest.Run(t, nil, gpuopstest.Binary(t), "why", "-n", l.team, "train-1", "--from", yamlBundle, "--now", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if !strings.Contains(later.Stdout, "Stuck") || later.Code != 1 {
		t.Errorf("--now an hour later: exit %d\n%s%s", later.Code, later.Stdout, later.Stderr)
	}
}

// Redacted, the bundle names no node, pod or namespace of the cluster, and
// the verdicts are the live ones up to the names.
func (l *lab) redact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "public.yaml")
	l.cluster.Want(t, 0, "collect", "--redact", "-o", path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Concat(l.nodes, l.pods, l.owners, []string{l.team, "gpu-operator"}) {
		if bytes.Contains(raw, []byte(name)) && !(name == "gpu-operator" && !regexp.MustCompile(`namespace: gpu-operator\b`).Match(raw)) {
			t.Errorf("the redacted bundle names %q", name)
		}
	}
	if len(l.owners) == 0 || !regexp.MustCompile(`\bowner-[0-9a-f]{10}\b`).Match(raw) {
		t.Errorf("the redacted bundle names no controller by its hash (ReplicaSets %q)", l.owners)
	}
	hashes := regexp.MustCompile(`\b(node|pod|ns)-[0-9a-f]{10}\b`)
	var quoted []string
	for _, n := range slices.Concat(l.nodes, l.pods, []string{l.team}) {
		quoted = append(quoted, regexp.QuoteMeta(n))
	}
	names := regexp.MustCompile(`\b(` + strings.Join(quoted, "|") + `)\b`)
	for _, args := range [][]string{{"health"}, {"audit", "--all-rules"}, {"summary"}, {"pods", "-o", "json"}} {
		live := l.cluster.Run(t, args...)
		got := gpuopstest.Run(t, nil, gpuopstest.Binary(t), append(args, "--from", path)...)
		norm := func(s string, re *regexp.Regexp) []string {
			lines := strings.Split(re.ReplaceAllString(gpuopstest.Volatile{}.Comparable(args, s), "<name>"), "\n")
			slices.Sort(lines)
			return lines
		}
		if got.Code != live.Code || !slices.Equal(norm(got.Stdout, hashes), norm(live.Stdout, names)) {
			t.Errorf("gpuops %s --from redacted: exit %d, live %d\n%s\nlive:\n%s", strings.Join(args, " "), got.Code, live.Code, got.Stdout, live.Stdout)
		}
	}
}

// Bad input is one line and exit 2, nothing on stdout; a user who may read
// nothing gets a bundle whose header names what was refused.
func (l *lab) badInputs(t *testing.T) {
	dir := t.TempDir()
	var full bytes.Buffer
	z := gzip.NewWriter(&full)
	z.Write([]byte(l.env.Kubectl(t, "get", "nodes", "-o", "yaml")))
	z.Close()
	cut := filepath.Join(dir, "cut.yaml.gz")
	if err := os.WriteFile(cut, full.Bytes()[:full.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	gpuopstest.WriteFile(t, filepath.Join(empty, "notes.txt"), "nothing\n")
	html := filepath.Join(dir, "report.html")
	for _, c := range []struct{ from, want string }{
		{gpuopstest.WriteFile(t, filepath.Join(dir, "text.yaml"), "NAME STATUS\ngpu-node-0 Ready\n"), "not YAML or JSON"},
		{gpuopstest.WriteFile(t, filepath.Join(dir, "secrets.yaml"), "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n"), "holds no object gpuops reads (only v1/Secret)"},
		{cut, "gzip: unexpected EOF"},
		{empty, "no .yaml, .yml or .json file"},
	} {
		for _, args := range [][]string{{"audit"}, {"health", "-o", "json"}, {"report", "--html", html}} {
			r := gpuopstest.Run(t, nil, gpuopstest.Binary(t), append(args, "--from", c.from)...)
			r.OneLineError(t, c.want)
			if r.Stdout != "" {
				t.Errorf("%s --from %s printed %q", args[0], filepath.Base(c.from), r.Stdout)
			}
		}
	}
	if _, err := os.Stat(html); !os.IsNotExist(err) {
		t.Errorf("report --html was written: %v", err)
	}

	// A service account with no rights: the bundle says what was refused.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}
	if _, err := l.env.Client.CoreV1().ServiceAccounts(l.env.Namespace).Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nobody := l.env.AccountKubeconfig(t, l.env.Namespace, "nobody")
	path := filepath.Join(dir, "refused.json")
	r := gpuopstest.Cluster{Kubeconfig: nobody}.Want(t, 0, "collect", "-o", path)
	var b struct{ Items []bundle.Header }
	raw, _ := os.ReadFile(path)
	if err := yaml.Unmarshal(raw, &b); err != nil || len(b.Items) != 1 {
		t.Fatalf("%v: %s", err, raw)
	}
	var refused []string
	for _, nr := range b.Items[0].NotRead {
		if nr.Reason == "Forbidden" {
			refused = append(refused, nr.Resource)
		}
	}
	for _, want := range []string{"nodes", "pods", "daemonsets.apps", "events"} {
		if !slices.Contains(refused, want) || !strings.Contains(r.Stderr, want) {
			t.Errorf("the header and stderr do not name %s as refused: %q\n%s", want, refused, r.Stderr)
		}
	}
	gpuopstest.Run(t, nil, gpuopstest.Binary(t), "audit", "--from", path).OneLineError(t, "list nodes")
}
