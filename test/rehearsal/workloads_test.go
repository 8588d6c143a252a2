package rehearsal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

// workloadCauses are the why codes the workloads scenario must meet, in
// its order: each the headline of the pod its case leaves Pending (or, the
// black hole, Stuck), on the real scheduler.
var workloadCauses = []string{workload.AllAllocated, workload.ExceedsNode, workload.ResourceNotOffered, workload.GPUsUnhealthy,
	workload.Fragmented, workload.Cordoned, workload.UntoleratedTaint, workload.SelectorMismatch, workload.OnUnusableNode}

// TestWorkloadsRehearsal runs the workloads scenario on a lab of the test's
// own (nodes a, b, c and host with 8 GPUs each, cpu without any) and checks,
// at every step, what gpuops why, pods and capacity say as a user runs them:
// while a case is broken, why names its cause for the pod (the black hole
// carrying health's cause) and pods lists that pod alone, as why says it;
// once healed the pod runs and nothing is stuck; capacity counts as
// allocated exactly the GPUs of the pods bound, and a cordoned node's free
// GPUs as stranded. Then every node is as the lab left it (labels, cordon,
// taints, field managers), and the command, run after the lab, leaves out/
// as the lab alone does.
func TestWorkloadsRehearsal(t *testing.T) {
	r := newRig(t, false)
	g, env, ctx := r.g, r.g.env, context.Background()
	a := g.names["a"]
	before := nodeStates(t, env)
	dyn, err := dynamic.NewForConfig(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]rehearsal.Case{}
	for _, c := range rehearsal.Cases(rehearsal.Workloads) {
		cases[c.Name] = c
	}
	var nodes, broke []string
	for _, n := range r.lab.Nodes {
		nodes = append(nodes, n.Name)
	}
	why := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig, Namespace: rehearsal.WorkloadsNamespace}
	stuckAfter := rehearsal.WorkloadsStuckAfter.String()
	err = rehearsal.RunOffer(ctx, env.Client, dyn, rehearsal.Workloads, rehearsal.Options{Namespace: env.Namespace, Nodes: nodes, Timeout: env.Timeout,
		Step: func(ctx context.Context, s rehearsal.Step) error {
			at := fmt.Sprintf("step %d (%s)", s.N, s.What)
			c, known := cases[s.Case]
			if s.Case != "" && !known {
				t.Fatalf("%s: case %q is not in the table", at, s.Case)
			}
			answers := map[string]workload.Answer{}
			for _, pod := range s.Pods {
				ns, name, _ := strings.Cut(pod, "/")
				if ns != rehearsal.WorkloadsNamespace {
					t.Fatalf("%s: pod %s outside %s", at, pod, rehearsal.WorkloadsNamespace)
				}
				res := why.Run(t, "why", name, "--operator-namespace", env.Namespace, "--stuck-after", stuckAfter, "-o", "json")
				var got workload.WhyReport
				if err := json.Unmarshal([]byte(res.Stdout), &got); err != nil || len(got.Answers) != 1 {
					t.Fatalf("%s: why %s: exit %d, %v\n%s%s", at, name, res.Code, err, res.Stdout, res.Stderr)
				}
				ans := got.Answers[0]
				answers[pod] = ans
				if code := map[bool]int{true: 1, false: 0}[ans.Finding()]; res.Code != code {
					t.Errorf("%s: why %s: exit %d, want %d", at, name, res.Code, code)
				}
				switch {
				case !s.Broken && (ans.State != workload.Running || ans.Code != ""):
					t.Errorf("%s: why %s: %s %s %q, want Running", at, name, ans.State, ans.Code, ans.Message)
				case s.Broken && ans.Code != c.Cause:
					t.Errorf("%s: why %s: %s %s %q, want %s", at, name, ans.State, ans.Code, ans.Message, c.Cause)
				case s.Broken && c.Cause == workload.OnUnusableNode && (ans.State != workload.Stuck || ans.Node != a || ans.Health == nil || ans.Health.Code != health.Order):
					t.Errorf("%s: why %s: %+v, want Stuck on %s carrying health's %s", at, name, ans, a, health.Order)
				case s.Broken && c.Cause != workload.OnUnusableNode && ans.State != workload.Pending:
					t.Errorf("%s: why %s: %s, want Pending", at, name, ans.State)
				}
			}
			if s.Broken {
				if len(s.Pods) != 1 {
					t.Fatalf("%s: the break names pods %v, want the one it leaves not running", at, s.Pods)
				}
				broke = append(broke, c.Cause)
			}

			// pods: the broken case's pod alone, as why says it.
			res := why.Run(t, "pods", "--operator-namespace", env.Namespace, "--stuck-after", stuckAfter, "-o", "json")
			var listed workload.PodsReport
			if err := json.Unmarshal([]byte(res.Stdout), &listed); err != nil {
				t.Fatalf("%s: pods: exit %d, %v\n%s%s", at, res.Code, err, res.Stdout, res.Stderr)
			}
			if code := map[bool]int{true: 1, false: 0}[s.Broken]; res.Code != code {
				t.Errorf("%s: pods exit %d, want %d", at, res.Code, code)
			}
			switch {
			case s.Broken && (len(listed.Pods) != 1 || !reflect.DeepEqual(listed.Pods[0], answers[s.Pods[0]])):
				t.Errorf("%s: pods lists %+v\nwhy says %+v", at, listed.Pods, answers[s.Pods[0]])
			case !s.Broken && len(listed.Pods) > 0:
				t.Errorf("%s: pods lists %+v, want none", at, listed.Pods)
			}
			checkCapacity(t, at, g, s.Broken && c.Cause == workload.Cordoned)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(broke, workloadCauses) {
		t.Errorf("the scenario met %v, want %v", broke, workloadCauses)
	}
	if after := nodeStates(t, env); !maps.Equal(after, before) {
		t.Errorf("nodes after the scenario:\n%v\nbefore:\n%v", after, before)
	}
	if _, err := env.Client.CoreV1().Namespaces().Get(ctx, rehearsal.WorkloadsNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the scenario: %v", rehearsal.WorkloadsNamespace, err)
	}

	// The command: the lab, then the scenario narrated, each cause named;
	// the lab run again after it writes out/ as before, and the nodes are
	// as they were.
	file := gpuopstest.WriteFile(t, filepath.Join(t.TempDir(), "lab.yaml"), r.spec)
	dir := t.TempDir()
	lab := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig}
	lab.Want(t, 0, "lab", "--lab", file, "--workdir", dir)
	out := gpuopstest.ReadDir(t, filepath.Join(dir, "out"))
	before = nodeStates(t, env)
	res := lab.Run(t, "lab", "--lab", file, "--workdir", dir, "--scenario", rehearsal.Workloads)
	if res.Code != 0 || !strings.Contains(res.Stdout, ": clean-up: deleted namespace "+rehearsal.WorkloadsNamespace) {
		t.Fatalf("lab --scenario %s: exit %d\n%s%s", rehearsal.Workloads, res.Code, res.Stdout, res.Stderr)
	}
	for _, code := range workloadCauses {
		state := map[bool]string{true: workload.Stuck, false: workload.Pending}[code == workload.OnUnusableNode]
		if line := "  " + rehearsal.WorkloadsNamespace + "/"; !strings.Contains(res.Stdout, "\n"+line) ||
			!strings.Contains(res.Stdout, " "+state+" "+code+" ") || !strings.Contains(res.Stdout, "\n  "+code+": 1\n") {
			t.Errorf("lab --scenario %s: no why line %s %s and pods group %s: 1 in\n%s", rehearsal.Workloads, state, code, code, res.Stdout)
		}
	}
	if after := nodeStates(t, env); !maps.Equal(after, before) {
		t.Errorf("nodes after lab --scenario %s:\n%v\nbefore:\n%v", rehearsal.Workloads, after, before)
	}
	lab.Want(t, 0, "lab", "--lab", file, "--workdir", dir)
	if again := gpuopstest.ReadDir(t, filepath.Join(dir, "out")); !maps.Equal(again, out) {
		t.Errorf("out/ after the scenario:\n%v\nbefore:\n%v", again, out)
	}
	// A cluster that has the scenario's namespace is refused before the
	// lab's first write.
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rehearsal.WorkloadsNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lab.WantError(t, "namespace "+rehearsal.WorkloadsNamespace+" exists", "lab", "--lab", file, "--workdir", t.TempDir(), "--scenario", rehearsal.Workloads)
}

// checkCapacity: gpuops capacity of the rig's nodes counts as allocated
// the GPUs the pods bound there ask, allocatable as allocated + free +
// stranded, and, with the walk's node cordoned, its free GPUs stranded.
func checkCapacity(t *testing.T, at string, g *gpuopsView, cordoned bool) {
	t.Helper()
	res := g.gpuops.Run(t, g.args("capacity", "-o", "json")...)
	var got workload.Capacity
	if err := json.Unmarshal([]byte(res.Stdout), &got); err != nil || res.Code != 0 || len(got.Pools) != 1 || len(got.Pools[0].Resources) != 1 {
		t.Fatalf("%s: capacity: exit %d, %v\n%s%s", at, res.Code, err, res.Stdout, res.Stderr)
	}
	c := got.Pools[0].Resources[0]
	pods, err := g.env.Client.CoreV1().Pods(rehearsal.WorkloadsNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var bound int64
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			q := p.Spec.Containers[0].Resources.Limits[corev1.ResourceName(snapshot.GPUResource)]
			bound += q.Value()
		}
	}
	var stranded int64
	for _, n := range c.Stranded {
		stranded += n
	}
	if c.Resource != snapshot.GPUResource || c.Nodes != 4 || c.Advertised != 32 || c.Allocated != bound || c.Allocatable != c.Allocated+c.Free+stranded ||
		(cordoned != (c.Stranded[workload.StrandedCordoned] > 0)) {
		t.Errorf("%s: capacity %+v; want 32 %s on 4 nodes, %d allocated, stranded only while cordoned (%v)", at, c, snapshot.GPUResource, bound, cordoned)
	}
}

// nodeStates are the rig's nodes as the scenario must leave them: labels,
// cordon, taints and the field managers that wrote them, one string each.
func nodeStates(t *testing.T, env *testcluster.Env) map[string]string {
	t.Helper()
	list, err := env.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: testcluster.LabelTestID + "=" + env.ID})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range list.Items {
		managers := slices.Sorted(maps.Keys(managerSet(&n)))
		out[n.Name] = fmt.Sprintf("labels %v unschedulable %v taints %v managers %v capacity %v", n.Labels, n.Spec.Unschedulable, n.Spec.Taints, managers, n.Status.Capacity)
	}
	return out
}
