package workloads_test

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/workload"
)

// TestCapacityIsTheHandCount: on a mixed fleet of the real control plane
// (whole, shared and MIG GPUs; some unhealthy, a node cordoned, one
// NotReady), with GPU pods of two namespaces bound by the scheduler and one
// it cannot place, gpuops capacity says what a count by hand says, in JSON
// and in text; and refuses bad input in one line.
func TestCapacityIsTheHandCount(t *testing.T) {
	env := testcluster.New(t)
	a100 := map[string]string{operand.GPUProductLabel: "A100", operand.GPUCountLabel: "8"}
	plain, sick, cordoned, down := env.NodeName("plain"), env.NodeName("sick"), env.NodeName("cordoned"), env.NodeName("down")
	shared, mig := env.NodeName("shared"), env.NodeName("mig")
	env.AddNode(t, plain, a100, devices("nvidia.com/gpu", 8, 8))
	env.AddNode(t, sick, a100, devices("nvidia.com/gpu", 8, 6))
	env.AddNode(t, cordoned, a100, devices("nvidia.com/gpu", 8, 8), testcluster.Unschedulable())
	env.AddNode(t, down, map[string]string{operand.GPUProductLabel: "A100", operand.GPUCountLabel: "8", operand.GPUPresent: "true"},
		devices("nvidia.com/gpu", 8, 8), testcluster.NotReady())
	env.AddNode(t, shared, map[string]string{operand.GPUCountLabel: "2"}, devices("nvidia.com/gpu.shared", 8, 8))
	env.AddNode(t, mig, map[string]string{operand.GPUProductLabel: "H100", operand.GPUCountLabel: "1"},
		devices("nvidia.com/mig-1g.10gb", 7, 7), devices("nvidia.com/mig-3g.40gb", 2, 2))
	other := env.OtherNamespace(t, "b")

	create(t, env, env.Namespace, pod("train", plain, "nvidia.com/gpu", 2), pod("sick-job", sick, "nvidia.com/gpu", 4),
		pod("share", shared, "nvidia.com/gpu.shared", 3), pod("slice", mig, "nvidia.com/mig-1g.10gb", 1),
		pod("big", "", "nvidia.com/gpu", 16))
	create(t, env, other, pod("infer", plain, "nvidia.com/gpu", 1))
	running := func(ns string, n int) {
		env.WaitForPods(t, ns, func(pods []corev1.Pod) bool {
			c := 0
			for _, p := range pods {
				if p.Status.Phase == corev1.PodRunning {
					c++
				}
			}
			return c == n
		})
	}
	running(env.Namespace, 4)
	running(other, 1)

	c := gpuopstest.On(env)
	sel := testcluster.LabelTestID + "=" + env.ID
	r := c.Want(t, 0, "capacity", "-l", sel, "-o", "json")
	var got workload.Capacity
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("capacity -o json: %v\n%s", err, r.Stdout)
	}
	none := map[string]int64{}
	want := workload.Capacity{GroupBy: summary.DefaultGroupBy, Pools: []workload.Pool{
		{Name: "A100", Nodes: 4, Physical: 32, Resources: []workload.Resource{{
			Resource: "nvidia.com/gpu", Kind: workload.Whole, Nodes: 4, Advertised: 32, Allocatable: 30, Unhealthy: 2,
			Allocated: 2 + 1 + 4, Free: 5 + 2, Stranded: map[string]int64{workload.StrandedCordoned: 8, workload.StrandedUnusable: 8},
			LargestFree: 5, LargestFreeNode: plain,
		}}},
		{Name: "H100", Nodes: 1, Physical: 1, Resources: []workload.Resource{
			{Resource: "nvidia.com/mig-1g.10gb", Kind: workload.MIG, Nodes: 1, Advertised: 7, Allocatable: 7, Allocated: 1, Free: 6, Stranded: none, LargestFree: 6, LargestFreeNode: mig},
			{Resource: "nvidia.com/mig-3g.40gb", Kind: workload.MIG, Nodes: 1, Advertised: 2, Allocatable: 2, Free: 2, Stranded: none, LargestFree: 2, LargestFreeNode: mig},
		}},
		{Name: summary.NoGroup, Nodes: 1, Physical: 2, Resources: []workload.Resource{
			{Resource: "nvidia.com/gpu.shared", Kind: workload.Shared, Nodes: 1, Advertised: 8, Allocatable: 8, Allocated: 3, Free: 5, Stranded: none, LargestFree: 5, LargestFreeNode: shared},
		}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("capacity -o json\n got %+v\nwant %+v", got, want)
	}

	r = c.Want(t, 0, "capacity", "-l", sel)
	wantText := "A100 nodes=4 physical=32\n" +
		"  nvidia.com/gpu (gpu) nodes=4 advertised=32 allocatable=30 allocated=7 free=7 unhealthy=2 stranded=16 (unusable=8 cordoned=8) largest-free=5 on " + plain + "\n" +
		"H100 nodes=1 physical=1\n" +
		"  nvidia.com/mig-1g.10gb (mig) nodes=1 advertised=7 allocatable=7 allocated=1 free=6 unhealthy=0 stranded=0 largest-free=6 on " + mig + "\n" +
		"  nvidia.com/mig-3g.40gb (mig) nodes=1 advertised=2 allocatable=2 allocated=0 free=2 unhealthy=0 stranded=0 largest-free=2 on " + mig + "\n" +
		"(none) nodes=1 physical=2\n" +
		"  nvidia.com/gpu.shared (shared) nodes=1 advertised=8 allocatable=8 allocated=3 free=5 unhealthy=0 stranded=0 largest-free=5 on " + shared + "\n"
	if r.Stdout != wantText {
		t.Errorf("capacity:\n%s\nwant:\n%s", r.Stdout, wantText)
	}

	c.WantError(t, "--selector", "capacity", "-l", "a in (")
	c.WantError(t, "--stuck-after", "capacity", "--stuck-after", "-1s")
	c.WantError(t, "table", "capacity", "-o", "table")
	c.WantError(t, "--group-by", "capacity", "--group-by", "not a label")
}

// TestServeWorkloadsAgrees: on one cluster (a node with unhealthy GPUs all
// taken, a cordoned one, a shared one, pods of two namespaces: running,
// waiting for GPUs, asking more than any node has; a DRA pod whose claim
// waits for devices a node publishes), serve --workloads exports what
// gpuops capacity and gpuops pods say: gpuops_gpus is capacity's every
// count per pool, resource and state, and gpuops_gpu_pods_blocked pods'
// stuck pods by namespace and cause. They are one pipeline, and never
// disagree. The DRA driver is first installed as its own chart installs
// it, its kubelet plugin's DaemonSet in a namespace of its own with no
// deploy label of the operator's (snapshot.RunsDRA): its node's devices
// are counted and the waiting DRA pod is judged node by node (all its
// devices allocated) by why, pods, capacity and serve alike, not said to
// ask what no node offers; and so once the operator runs the plugin too.
func TestServeWorkloadsAgrees(t *testing.T) {
	env := testcluster.New(t)
	a100 := map[string]string{operand.GPUProductLabel: "A100", operand.GPUCountLabel: "8"}
	full, cordoned, shared := env.NodeName("full"), env.NodeName("cordoned"), env.NodeName("shared")
	env.AddNode(t, full, a100, devices(gpu, 8, 6))
	env.AddNode(t, cordoned, a100, devices(gpu, 8, 8), testcluster.Unschedulable())
	env.AddNode(t, shared, map[string]string{operand.GPUCountLabel: "2"}, devices("nvidia.com/gpu.shared", 8, 8))
	other := env.OtherNamespace(t, "b")
	create(t, env, env.Namespace, pod("holder", full, gpu, 6), pod("share", shared, "nvidia.com/gpu.shared", 3))
	runs(t, env, "holder", full)
	runs(t, env, "share", shared)
	create(t, env, env.Namespace, pod("waits", "", gpu, 2), pod("asks-16", "", gpu, 16))
	create(t, env, other, pod("waits-too", "", gpu, 1))
	env.Unscheduled(t, "waits")
	env.Unscheduled(t, "asks-16")
	// The DRA node publishes 2 GPUs; one is claimed by a pod that runs
	// there, and a pod claiming 2 waits.
	class := gpuopstest.DeviceClass(t, env)
	dra := env.AddNode(t, env.NodeName("dra"), nil)
	gpuopstest.Publish(t, env, dra, []rehearsal.Slice{{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", 2)}})
	gpuopstest.ClaimPod(t, env, "dra-holder", class, 1, "", dra.Name)
	runs(t, env, "dra-holder", dra.Name)
	gpuopstest.ClaimPod(t, env, "dra-waits", class, 2, "", "")
	env.Unscheduled(t, "dra-waits")
	// The driver's chart's DaemonSet (kubernetes-sigs/dra-driver-nvidia-gpu
	// deployments/helm/dra-driver-nvidia-gpu/templates/kubeletplugin.yaml),
	// on no node.
	chart := testcluster.DaemonSet(env.OtherNamespace(t, "dra-driver"), "dra-driver-nvidia-gpu-kubelet-plugin", map[string]string{"nvidia.com/dra-kubelet-plugin": "true"}, "16Mi")
	if _, err := env.Client.AppsV1().DaemonSets(chart.Namespace).Create(context.Background(), chart, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c := gpuopstest.On(env)
	s := c.Serve(t, "serve", "--workloads", "--stuck-after", "1ns")
	capacity := func() map[string]float64 {
		var got workload.Capacity
		r := c.Want(t, 0, "capacity", "-o", "json")
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("capacity -o json: %v\n%s", err, r.Stdout)
		}
		out := map[string]float64{}
		for _, p := range got.Pools {
			out[p.Name+" physical"] = float64(p.Physical)
			for _, r := range p.Resources {
				for state, v := range map[string]int64{"allocatable": r.Allocatable, "allocated": r.Allocated, "free": r.Free,
					"unhealthy": r.Unhealthy, "stranded": r.StrandedTotal()} {
					out[p.Name+" "+r.Resource+" "+state] = float64(v)
				}
			}
		}
		return out
	}
	blocked := func() map[string]float64 {
		var got workload.PodsReport
		// pods' -n is the pods' namespace: without it, every namespace, as serve judges them.
		r := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig}.Want(t, 1, "pods", "--operator-namespace", env.Namespace, "-o", "json", "--stuck-after", "1ns")
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("pods -o json: %v\n%s", err, r.Stdout)
		}
		out := map[string]float64{}
		for _, a := range got.Pods {
			if a.Finding() {
				ns, _, _ := strings.Cut(a.Pod, "/")
				out[ns+" "+a.Code]++
			}
		}
		return out
	}
	served := func(m gpuopstest.Scrape) (gpus, pods map[string]float64) {
		gpus, pods = map[string]float64{}, map[string]float64{}
		for _, x := range m.Samples("gpuops_gpus") {
			gpus[strings.Join(strings.Fields(x.Labels["pool"]+" "+x.Labels["resource"]+" "+x.Labels["state"]), " ")] = x.Value
		}
		for _, x := range m.Samples("gpuops_gpu_pods_blocked") {
			pods[x.Labels["namespace"]+" "+x.Labels["cause"]] = x.Value
		}
		return gpus, pods
	}
	agree := func(when string) (gpus, pods map[string]float64) {
		t.Helper()
		wantGPUs, wantPods := capacity(), blocked()
		var gotGPUs, gotPods map[string]float64
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, gpuopstest.Patience, true, func(context.Context) (bool, error) {
			m, err := s.TryScrape()
			if err != nil {
				return false, nil
			}
			gotGPUs, gotPods = served(m)
			return maps.Equal(gotGPUs, wantGPUs) && maps.Equal(gotPods, wantPods), nil
		})
		if err != nil {
			t.Fatalf("%s, serve --workloads never said what capacity and pods say:\n serve    %v\n          %v\n one-shot %v\n          %v",
				when, gotGPUs, gotPods, wantGPUs, wantPods)
		}
		// The one-shot commands again: they say now what serve said.
		if g, p := capacity(), blocked(); !maps.Equal(g, gotGPUs) || !maps.Equal(p, gotPods) {
			t.Errorf("%s, serve --workloads %v %v\ncapacity and pods %v %v", when, gotGPUs, gotPods, g, p)
		}
		return gotGPUs, gotPods
	}
	ns := env.Namespace + " "
	draGPUs := summary.NoGroup + " " + snapshot.DRADriverName + " allocated"
	gpus, pods := agree("with the DRA driver's own chart")
	// The whole cluster is compared: what earlier tests left counts on both sides.
	if len(pods) < 3 || gpus["A100 nvidia.com/gpu stranded"] < 8 || gpus["A100 nvidia.com/gpu unhealthy"] < 2 {
		t.Fatalf("the cluster is not as built: capacity %v, pods %v", gpus, pods)
	}
	if pods[ns+workload.AllAllocated] != 1 || pods[ns+workload.ResourceNotOffered] != 0 || gpus[draGPUs] != 1 {
		t.Errorf("the DRA node of the driver's chart not counted: capacity %v, pods %v", gpus, pods)
	}
	if a := why(t, env, "dra-waits"); a.Code != workload.AllAllocated {
		t.Errorf("why dra-waits: %s %s, want %s", a.Code, a.Message, workload.AllAllocated)
	}
	// The operator's kubelet plugin's DaemonSet too, on no node (its
	// deploy label is what snapshot.RunsDRA looks for).
	o, err := operand.Lookup(operand.Real, operand.DRADriver)
	if err != nil {
		t.Fatal(err)
	}
	plugin := testcluster.DaemonSet(env.Namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "16Mi")
	if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(context.Background(), plugin, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpus, pods = agree("with the operator's DRA kubelet plugin")
	if pods[ns+workload.AllAllocated] != 1 || pods[ns+workload.ResourceNotOffered] != 0 || gpus[draGPUs] != 1 {
		t.Fatalf("the DRA node not counted: capacity %v, pods %v", gpus, pods)
	}
}

// TestSummaryReadsThePodsAsCapacity: summary's and report --html's block of
// where the GPUs are (pipeline.Run with the fleet views' options) reads the
// pods of every namespace as gpuops capacity does: the same LISTs, each
// narrowed on the server by a field selector (read.GPUPods, which trims
// them as they arrive), never a LIST of every pod, nor one twice (the
// Failed pods are health's and the workload side's); and it counts what
// capacity counts.
func TestSummaryReadsThePodsAsCapacity(t *testing.T) {
	env := testcluster.New(t)
	node := env.NodeName("a")
	env.AddNode(t, node, map[string]string{operand.GPUProductLabel: "A100", operand.GPUCountLabel: "8"}, devices(gpu, 8, 8))
	create(t, env, env.Namespace, pod("train", node, gpu, 2))
	runs(t, env, "train", node)

	opts := pipeline.Options{Namespace: env.Namespace, NodeSelector: testcluster.LabelTestID + "=" + env.ID, Roster: pipeline.DiscoverRoster,
		GroupBy: pipeline.DefaultGroupBy, StuckAfter: pipeline.DefaultStuckAfter}
	cliopts.FleetOptions(&opts)
	// podLists are the LISTs of the pods of every namespace that read
	// makes, each as its query, sorted.
	podLists := func(read func(kubernetes.Interface) error) []string {
		client, rec := env.RecordedClient(t)
		if err := read(client); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rec.Requests() {
			if r.URL.Path == "/api/v1/pods" {
				q := r.URL.Query()
				q.Del("limit") // the page size, not what is read
				out = append(out, q.Encode())
			}
		}
		slices.Sort(out)
		return out
	}
	var fleet, capacity *workload.Capacity
	fleetLists := podLists(func(c kubernetes.Interface) error {
		r, err := pipeline.Run(context.Background(), c, opts)
		if r != nil {
			fleet = r.Capacity
		}
		return err
	})
	capacityLists := podLists(func(c kubernetes.Interface) (err error) {
		capacity, err = pipeline.Capacity(context.Background(), c, opts)
		return err
	})
	podsLists := podLists(func(c kubernetes.Interface) error {
		_, err := pipeline.Pods(context.Background(), c, opts, "", "")
		return err
	})
	if !slices.Equal(fleetLists, capacityLists) {
		t.Errorf("the fleet view lists the pods of every namespace\n%q\ncapacity\n%q", fleetLists, capacityLists)
	}
	for what, lists := range map[string][]string{"summary": fleetLists, "capacity": capacityLists, "pods": podsLists} {
		for i, q := range lists {
			if !strings.Contains(q, "fieldSelector=") {
				t.Errorf("%s: a LIST of every pod not narrowed by a field selector: %s", what, q)
			}
			// Health's refused pods and the workload side's are one LIST.
			if i > 0 && q == lists[i-1] {
				t.Errorf("%s lists the pods of every namespace twice: %s", what, q)
			}
		}
	}
	if fleet == nil || !reflect.DeepEqual(fleet, capacity) || len(capacity.Pools) != 1 || capacity.Pools[0].Resources[0].Allocated != 2 {
		t.Errorf("the fleet view's capacity %+v, capacity's %+v (want A100: 2 of 8 allocated)", fleet, capacity)
	}
}
