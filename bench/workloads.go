package main

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
	"github.com/gpuops/gpuops/pkg/workload"
)

// The workloads (-workloads N): the users' side of the fleet, what gpuops
// pods, capacity and serve --workloads read. N pods that have not ended,
// spread over the fleet's schedulable nodes in a handful of namespaces,
// one in five asking GPUs as its node offers them (nvidia.com/gpu on a
// plain node, the shared name on a time-slicing node, the MIG profile on a
// MIG node, a ResourceClaim of the DRA driver's class on a DRA node, its
// allocation written as the scheduler's DRA plugin writes it: the node's
// devices by name), never more than the node has left; bound by
// spec.nodeName and Running. Beside them a realistic few
// stuck: pods the scheduler cannot place (its own PodScheduled=False
// condition, as the real scheduler of the bench's cluster writes it), pods
// the kubelet refused at admission, and Warning Events on running pods
// (which judge nothing: a running pod made its sandbox since).

// workloadLabel marks every pod the bench makes for the workloads (the
// serve churn's and probe's too): one LIST finds them on a kept fleet.
const workloadLabel = "gpuops.bench/workload"

// probeNamespace holds serve's probe pods (serve.go): a namespace of its
// own, so that its gpuops_gpu_pods_blocked series is the probe's alone.
const probeNamespace = "gpuops-bench-probe"

// workloadNamespaces are the users' namespaces, a pod's by its number.
var workloadNamespaces = []string{"team-a", "team-b", "ml-train", "ml-infer", "research"}

// workloadCPU and workloadMemory are each workload pod's requests: at 100
// pods a node (the bench's limit, below the node's 110) they fit its 32
// cores and 256 GiB with the operands'.
const (
	workloadCPU    = "250m"
	workloadMemory = "2Gi"
	podsPerNode    = 100
)

// The stuck few, in the namespaces of the users: pods asking more GPUs
// than any node has (exceeds-node), pods asking a MIG profile no node
// offers (resource-not-offered), both left Pending by the scheduler; and
// pods the kubelet refused at admission (admission-rejected).
const (
	stuckExceeds   = 3
	stuckUnoffered = 2
	stuckRefused   = 3
	unofferedMIG   = "3g.40gb"
)

// refusedMessage is the kubelet's status message of a pod its device
// manager could not allocate: "Allocate failed due to requested number of
// devices unavailable for %s. Requested: %d, Available: %d, which is
// unexpected" (kubernetes v1.37.2 pkg/kubelet/cm/devicemanager/manager.go),
// prefixed "Pod was rejected: " by the kubelet's rejectPod
// (pkg/kubelet/kubelet.go), reason UnexpectedAdmissionError
// (pkg/kubelet/lifecycle/predicate.go).
const refusedMessage = "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"

// probeWarning is a Warning the kubelet records on a pod whose readiness
// probe fails: "%s probe failed: %s" (kubernetes v1.37.2
// pkg/kubelet/prober/prober.go) of an HTTP probe's "HTTP probe failed with
// statuscode: %d" (pkg/probe/http/http.go), reason Unhealthy
// (pkg/kubelet/events/event.go).
const (
	probeWarningReason  = "Unhealthy"
	probeWarningMessage = "Readiness probe failed: HTTP probe failed with statuscode: 503"
)

// podState is what the bench makes of a planned pod.
type podState int

const (
	runs       podState = iota // bound and Running
	unplaced                   // Pending, the scheduler's to refuse
	refusedPod                 // bound, Failed at admission (KWOK's rejected stage)
)

// workloadPod is one planned pod.
type workloadPod struct {
	name, namespace, node string
	asks                  corev1.ResourceName // a device resource, the DRA driver's name (a claim), or "" for none
	count                 int64
	first                 int64 // a claim's first device of its node's (gpu-<first>, …)
	state                 podState
	warned                bool // carries a Warning Event
}

func (w workloadPod) key() string { return w.namespace + "/" + w.name }

// workloadFleet is the workloads planned on a fleet, and what the judges
// must say of them.
type workloadFleet struct {
	pods []workloadPod
	// allocated is what the Running pods ask, by node and resource.
	allocated map[string]map[corev1.ResourceName]int64
}

// offered is the device resource a node's pods ask and how many it has
// (the DRA driver's name on a DRA node: its claims' devices): none on a
// node health calls unusable (its pods would be stuck there, as they are
// not meant to be) or without GPUs.
func (f fleetNode) offered() (corev1.ResourceName, int64) {
	if f.role != gpu {
		return "", 0
	}
	if code, _ := f.offerCause(); code != "" {
		return "", 0
	}
	if f.offer == dra {
		return snapshot.DRADriverName, gpusPerNode
	}
	n := f.object(true, false)
	for name, q := range n.Status.Allocatable {
		if snapshot.IsDeviceResource(string(name)) {
			return name, q.Value()
		}
	}
	return "", 0
}

// schedulable reports whether user pods may run on the node: not the
// nodes every operand's DaemonSet is kept off, nor the low-memory ones.
func (f fleetNode) schedulable() bool { return f.role == gpu || f.role == noGPU }

// planWorkloads lays out n running pods on the fleet, one in five asking
// GPUs, and the stuck few; nil when n is 0.
func planWorkloads(fleet []fleetNode, n int) (*workloadFleet, error) {
	if n == 0 {
		return nil, nil
	}
	w := &workloadFleet{allocated: map[string]map[corev1.ResourceName]int64{}}
	var nodes, gpuNodes []fleetNode
	left := map[string]int64{}
	for _, f := range fleet {
		if !f.schedulable() {
			continue
		}
		nodes = append(nodes, f)
		if _, have := f.offered(); have > 0 {
			gpuNodes = append(gpuNodes, f)
			left[f.name] = have
		}
	}
	if len(gpuNodes) == 0 || n > podsPerNode*len(nodes) {
		return nil, fmt.Errorf("-workloads %d: the fleet has %d schedulable nodes (%d a node at most) and %d offering GPUs", n, len(nodes), podsPerNode, len(gpuNodes))
	}
	// The stuck few first, so that the scheduler and KWOK refuse them while
	// the others are made.
	stuck := func(prefix string, k int, asks corev1.ResourceName, count int64, state podState, node string) {
		for i := range k {
			w.pods = append(w.pods, workloadPod{name: fmt.Sprintf("%s-%d", prefix, i), namespace: workloadNamespaces[i%len(workloadNamespaces)],
				asks: asks, count: count, state: state, node: node})
		}
	}
	stuck("stuck-exceeds", stuckExceeds, snapshot.GPUResource, 2*gpusPerNode, unplaced, "")
	stuck("stuck-unoffered", stuckUnoffered, corev1.ResourceName(snapshot.MIGResource(unofferedMIG)), 1, unplaced, "")
	stuck("refused", stuckRefused, snapshot.GPUResource, 1, refusedPod, gpuNodes[0].name)
	next := 0 // the GPU node the next GPU pod tries
	for i := range n {
		p := workloadPod{name: fmt.Sprintf("wl-%06d", i), namespace: workloadNamespaces[i%len(workloadNamespaces)],
			node: nodes[i%len(nodes)].name, warned: i%1000 == 7}
		if i%5 == 0 {
			// 1, 2 or 4 of the node's devices, as many as it has left.
			for tries := 0; tries < len(gpuNodes) && p.asks == ""; tries++ {
				g := gpuNodes[next%len(gpuNodes)]
				next++
				if left[g.name] == 0 {
					continue
				}
				name, have := g.offered()
				p.node, p.asks, p.count, p.first = g.name, name, min(int64(1)<<(i/5%3), left[g.name]), have-left[g.name]
				left[g.name] -= p.count
				if w.allocated[g.name] == nil {
					w.allocated[g.name] = map[corev1.ResourceName]int64{}
				}
				w.allocated[g.name][name] += p.count
			}
			if p.asks == "" {
				return nil, fmt.Errorf("-workloads %d: the fleet's GPUs are all taken by the %d-th GPU pod", n, i/5)
			}
		}
		w.pods = append(w.pods, p)
	}
	return w, nil
}

// expectedPods is what gpuops pods must count by cause.
func (w *workloadFleet) expectedPods() map[string]int {
	out := map[string]int{}
	for _, p := range w.pods {
		switch {
		case p.state == refusedPod:
			out[workload.AdmissionRejected]++
		case p.state == unplaced && p.asks == snapshot.GPUResource:
			out[workload.ExceedsNode]++
		case p.state == unplaced:
			out[workload.ResourceNotOffered]++
		}
	}
	return out
}

// checkPods checks gpuops pods' text: its "<code>: <n>" lines are the
// stuck few by cause, and nothing else.
func (w *workloadFleet) checkPods(out []byte) string {
	got := map[string]int{}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "  ") || l == "no GPU pod stuck" {
			continue
		}
		var code string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(l, ":", " ", 1), "%s %d", &code, &n); err != nil {
			return fmt.Sprintf("**WRONG**: %q", l)
		}
		got[code] = n
	}
	want := w.expectedPods()
	if !maps.Equal(got, want) {
		return fmt.Sprintf("**WRONG**: by cause %v, want %v", got, want)
	}
	return fmt.Sprintf("as expected (%d lines; by cause %v)", len(lines), want)
}

// capacityTotals are one resource's counts summed over the pools.
type capacityTotals struct{ advertised, allocatable, allocated, free, unhealthy, stranded int64 }

func (t capacityTotals) String() string {
	return fmt.Sprintf("advertised=%d allocatable=%d allocated=%d free=%d unhealthy=%d stranded=%d", t.advertised, t.allocatable, t.allocated, t.free, t.unhealthy, t.stranded)
}

// expectedCapacity is what gpuops capacity must count per resource over
// the fleet: what each node advertises, what the running pods ask there,
// the rest free, or stranded on a node health calls unusable (devices
// tainted only lower its count); the DRA driver's devices from each DRA
// node's slice, its tainted ones unhealthy.
func (w *workloadFleet) expectedCapacity(fleet []fleetNode) map[string]capacityTotals {
	out := map[string]capacityTotals{}
	for _, f := range fleet {
		n := f.object(true, false)
		code, _ := f.offerCause()
		for name, q := range n.Status.Allocatable {
			if !snapshot.IsDeviceResource(string(name)) {
				continue
			}
			t := out[string(name)]
			held := w.allocated[f.name][name]
			advertised := n.Status.Capacity[name]
			t.advertised += advertised.Value()
			t.allocatable += q.Value()
			t.allocated += held
			if code != "" && code != health.DevicesTainted {
				t.stranded += q.Value() - held
			} else {
				t.free += q.Value() - held
			}
			out[string(name)] = t
		}
		if f.offer == dra {
			devices := f.slice(n).Spec.Devices
			tainted := int64(0)
			for _, d := range devices {
				if len(d.Taints) > 0 {
					tainted++
				}
			}
			t := out[snapshot.DRADriverName]
			held := w.allocated[f.name][snapshot.DRADriverName]
			t.advertised += int64(len(devices))
			t.allocatable += int64(len(devices)) - tainted
			t.unhealthy += tainted
			t.allocated += held
			t.free += int64(len(devices)) - tainted - held
			out[snapshot.DRADriverName] = t
		}
	}
	return out
}

// checkCapacity checks gpuops capacity's text: per resource, its counts
// summed over the pools are the fleet's.
func (w *workloadFleet) checkCapacity(fleet []fleetNode) func([]byte) string {
	return func(out []byte) string {
		got := map[string]capacityTotals{}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		for _, l := range lines {
			if !strings.HasPrefix(l, "  ") {
				continue
			}
			var name, kind string
			var nodes int
			var c capacityTotals
			if _, err := fmt.Sscanf(strings.TrimSpace(l), "%s %s nodes=%d advertised=%d allocatable=%d allocated=%d free=%d unhealthy=%d stranded=%d",
				&name, &kind, &nodes, &c.advertised, &c.allocatable, &c.allocated, &c.free, &c.unhealthy, &c.stranded); err != nil {
				return fmt.Sprintf("**WRONG**: %q: %v", l, err)
			}
			t := got[name]
			t.advertised, t.allocatable, t.allocated = t.advertised+c.advertised, t.allocatable+c.allocatable, t.allocated+c.allocated
			t.free, t.unhealthy, t.stranded = t.free+c.free, t.unhealthy+c.unhealthy, t.stranded+c.stranded
			got[name] = t
		}
		want := w.expectedCapacity(fleet)
		for _, name := range slices.Sorted(maps.Keys(want)) {
			if got[name] != want[name] {
				return fmt.Sprintf("**WRONG**: %s %s, want %s", name, got[name], want[name])
			}
		}
		if len(got) != len(want) {
			return fmt.Sprintf("**WRONG**: resources %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		return fmt.Sprintf("as expected (%d lines; %d resources' totals checked)", len(lines), len(want))
	}
}

// object is the pod as a user's controller would make it: one container
// with its requests (and its devices as limits, as the device plugin's
// resources are asked), a few env vars and mounts; bound when planned so.
func (w workloadPod) object() *corev1.Pod {
	app := w.namespace + "-worker"
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(workloadCPU), corev1.ResourceMemory: resource.MustParse(workloadMemory)}
	var tolerations []corev1.Toleration
	var claims []corev1.PodResourceClaim
	var uses []corev1.ResourceClaim
	switch w.asks {
	case "":
	case snapshot.DRADriverName:
		name := w.claimName()
		claims, uses = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}, []corev1.ResourceClaim{{Name: "gpu"}}
	default:
		limits[w.asks] = *resource.NewQuantity(w.count, resource.DecimalSI)
		tolerations = []corev1.Toleration{{Key: snapshot.GPUResource, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	var env []corev1.EnvVar
	for i, k := range []string{"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NCCL_DEBUG", "OMP_NUM_THREADS", "HF_HOME", "DATA_DIR"} {
		env = append(env, corev1.EnvVar{Name: k, Value: fmt.Sprintf("%s-%d", strings.ToLower(k), i)})
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: w.namespace,
			Labels: map[string]string{workloadLabel: "true", "app.kubernetes.io/name": app, "app.kubernetes.io/part-of": w.namespace}},
		Spec: corev1.PodSpec{
			NodeName: w.node, Tolerations: tolerations, ResourceClaims: claims,
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/" + w.namespace + "/" + app + ":2.4.1",
				Command: []string{"python", "-m", "worker"}, Args: []string{"--config=/etc/worker/config.yaml"}, Env: env,
				Resources:    corev1.ResourceRequirements{Requests: limits, Limits: limits, Claims: uses},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/worker"}, {Name: "scratch", MountPath: "/scratch"}}}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if w.state == refusedPod {
		r := testcluster.Rejected("", w.node, snapshot.UnexpectedAdmissionError, refusedMessage, time.Time{}, p.Spec)
		p.Annotations = r.Annotations
	}
	return p
}

// matches reports whether the pod (and its claim) are as planned: on its
// node, asking what the plan asks.
func (w workloadPod) matches(p *corev1.Pod, claim *resourcev1.ResourceClaim) bool {
	want := w.object()
	if p.Spec.NodeName != want.Spec.NodeName || !apiequality.Semantic.DeepEqual(p.Spec.Containers[0].Resources, want.Spec.Containers[0].Resources) {
		return false
	}
	if w.asks != snapshot.DRADriverName {
		return true
	}
	if claim == nil || claim.Spec.Devices.Requests[0].Exactly == nil || claim.Spec.Devices.Requests[0].Exactly.Count != w.count {
		return false
	}
	a := claim.Status.Allocation
	return a == nil || (len(a.Devices.Results) > 0 && a.Devices.Results[0].Pool == w.node && a.Devices.Results[0].Device == fmt.Sprintf("gpu-%d", w.first))
}

// draClass is the DRA driver's DeviceClass, as its chart makes it
// (NVIDIA/k8s-dra-driver-gpu deployments/helm deviceclass-gpu.yaml; the
// selector test/dra's class has).
func draClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: snapshot.DRADriverName}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: "device.driver == '" + snapshot.DRADriverName + "' && device.attributes['" + snapshot.DRADriverName + "'].type == 'gpu'"}}}}}
}

func (w workloadPod) claimName() string { return w.name + "-gpu" }

// claim is the pod's ResourceClaim of count GPUs of the driver's class.
func (w workloadPod) claim() *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: w.claimName(), Namespace: w.namespace, Labels: map[string]string{workloadLabel: "true"}},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: snapshot.DRADriverName, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: w.count}}}}}}
}

// allocate writes the claim's allocation as the scheduler's DRA plugin
// does once it has picked the devices (its node's, gpu-<first> on, from
// the pool its slice publishes, named after the node), reserved for the
// pod.
func (w workloadPod) allocate(ctx context.Context, c kubernetes.Interface, claim *resourcev1.ResourceClaim, pod *corev1.Pod) error {
	var results []resourcev1.DeviceRequestAllocationResult
	for d := range w.count {
		results = append(results, resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: snapshot.DRADriverName, Pool: w.node,
			Device: fmt.Sprintf("gpu-%d", w.first+d)})
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: results}}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	if _, err := c.ResourceV1().ResourceClaims(w.namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: "gpuops-bench"}); err != nil {
		return fmt.Errorf("allocate claim %s/%s: %w", w.namespace, claim.Name, err)
	}
	return nil
}

// runningStatus is what a kubelet writes of a pod it runs, as KWOK's
// pod-ready stage does.
func runningStatus(p *corev1.Pod, i int) corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, QOSClass: p.Status.QOSClass,
		HostIP: "10.0.0.1", PodIP: fmt.Sprintf("10.%d.%d.%d", 128+i>>16, (i>>8)&255, i&255)}
	st.HostIPs, st.PodIPs = []corev1.HostIP{{IP: st.HostIP}}, []corev1.PodIP{{IP: st.PodIP}}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	started := true
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
			ContainerID: fmt.Sprintf("containerd://%064x", i), Ready: true, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	return st
}

// applyWorkloads makes the fleet's workloads what w plans, on a new fleet
// or a kept one: it creates the namespaces and the pods that are missing,
// sets Running the bound pods that are not yet, deletes the bench's pods
// that are not planned (a larger -workloads before, a churn cut short),
// records the Warnings, and waits until the scheduler has refused the
// unplaced pods and KWOK has failed the refused ones. Every write is made
// concurrently (64 in flight, no client throttle).
//
// The bench sets the Running status itself rather than waiting for KWOK's
// pod-ready stage: KWOK takes its pod stages 32 at a time beside the
// fleet's other work, at the pace waitPods sees the operand pods come up,
// at which 50,000 pods would take most of an hour; a status written
// Running and Ready is one KWOK's stages then leave alone.
func applyWorkloads(ctx context.Context, c kubernetes.Interface, w *workloadFleet) (string, error) {
	start := time.Now()
	have, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: workloadLabel, ResourceVersion: "0"})
	if err != nil {
		return "", err
	}
	haveClaims, err := c.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{LabelSelector: workloadLabel, ResourceVersion: "0"})
	if err != nil {
		return "", err
	}
	existing, claims := byKey[corev1.Pod](have.Items), byKey[resourcev1.ResourceClaim](haveClaims.Items)
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, draClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create DeviceClass %s: %w", snapshot.DRADriverName, err)
	}
	for _, ns := range append(slices.Clone(workloadNamespaces), probeNamespace) {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	var mu sync.Mutex
	var created, started, deleted, warned, allocated int
	count := func(n *int) { mu.Lock(); *n++; mu.Unlock() }
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	planned := map[string]bool{}
	for i, p := range w.pods {
		planned[p.key()] = true
		pod := existing[p.key()]
		var claim *resourcev1.ResourceClaim
		if p.asks == snapshot.DRADriverName {
			planned[p.namespace+"/"+p.claimName()] = true
			claim = claims[p.namespace+"/"+p.claimName()]
		}
		g.Go(func() error {
			var err error
			// One made to another plan (by an older bench) is not made again
			// under the same name: KWOK's late deletion of the old pod would
			// take the new one.
			if pod != nil && !p.matches(pod, claim) {
				return fmt.Errorf("pod %s is not as this bench plans it (made by another version?): delete the namespaces %s first", p.key(), strings.Join(workloadNamespaces, " "))
			}
			if p.asks == snapshot.DRADriverName && claim == nil {
				if claim, err = c.ResourceV1().ResourceClaims(p.namespace).Create(gctx, p.claim(), metav1.CreateOptions{FieldManager: "gpuops-bench"}); err != nil {
					return fmt.Errorf("create claim %s/%s: %w", p.namespace, p.claimName(), err)
				}
			}
			if pod == nil {
				if pod, err = createPod(gctx, c, p.object()); err != nil {
					return err
				}
				count(&created)
			}
			if claim != nil && claim.Status.Allocation == nil {
				if err := p.allocate(gctx, c, claim, pod); err != nil {
					return err
				}
				count(&allocated)
			}
			if p.state == runs && pod.Status.Phase != corev1.PodRunning {
				if err := setRunning(gctx, c, pod, i); err != nil {
					return err
				}
				count(&started)
			}
			if p.warned {
				if err := warn(gctx, c, pod); err != nil {
					return err
				}
				count(&warned)
			}
			return nil
		})
	}
	deleteUnplanned(g, existing, planned, func(p *corev1.Pod) error {
		count(&deleted)
		return c.CoreV1().Pods(p.Namespace).Delete(gctx, p.Name, *metav1.NewDeleteOptions(0))
	})
	deleteUnplanned(g, claims, planned, func(claim *resourcev1.ResourceClaim) error {
		return c.ResourceV1().ResourceClaims(claim.Namespace).Delete(gctx, claim.Name, metav1.DeleteOptions{})
	})
	if err := g.Wait(); err != nil {
		return "", err
	}
	written := time.Since(start)
	if err := w.waitStuck(ctx, c); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d pods created, %d set Running, %d claims allocated, %d not planned deleted, %d Warning Events in place (made where missing) in %.1f s; the stuck refused %.1f s later",
		created, started, allocated, deleted, warned, written.Seconds(), (time.Since(start) - written).Seconds()), nil
}

// byKey indexes listed objects by namespace/name.
func byKey[T any, P interface {
	*T
	metav1.Object
}](items []T) map[string]P {
	out := make(map[string]P, len(items))
	for i := range items {
		o := P(&items[i])
		out[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return out
}

// deleteUnplanned deletes, in g, the bench's objects the plan does not
// hold (one gone already is no error).
func deleteUnplanned[P metav1.Object](g *errgroup.Group, have map[string]P, planned map[string]bool, del func(P) error) {
	for key, o := range have {
		if planned[key] {
			continue
		}
		g.Go(func() error {
			if err := del(o); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s: %w", key, err)
			}
			return nil
		})
	}
}

// createPod creates the pod, retrying while its namespace's default
// ServiceAccount is not made yet (the admission plugin refuses it then).
func createPod(ctx context.Context, c kubernetes.Interface, p *corev1.Pod) (*corev1.Pod, error) {
	for {
		got, err := c.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "gpuops-bench"})
		if err == nil {
			return got, nil
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "serviceaccount") {
			return nil, fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// setRunning writes the pod Running; if KWOK wrote it first, its status
// stands.
func setRunning(ctx context.Context, c kubernetes.Interface, pod *corev1.Pod, i int) error {
	for {
		pod.Status = runningStatus(pod, i)
		_, err := c.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "gpuops-bench"})
		if !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("set pod %s/%s Running: %w", pod.Namespace, pod.Name, err)
			}
			return nil
		}
		if pod, err = c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		if pod.Status.Phase == corev1.PodRunning {
			return nil
		}
	}
}

// warn records the kubelet's Warning on the pod, once (a fixed name).
func warn(ctx context.Context, c kubernetes.Interface, p *corev1.Pod) error {
	now := metav1.Now()
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: p.Name + ".bench-unhealthy", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1", FieldPath: "spec.containers{main}"},
		Reason:         probeWarningReason, Message: probeWarningMessage, Type: corev1.EventTypeWarning, Count: 12,
		Source: corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName}, FirstTimestamp: now, LastTimestamp: now}
	if _, err := c.CoreV1().Events(p.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("record a Warning on pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// waitStuck waits until the scheduler has said why it places the unplaced
// pods nowhere and KWOK has failed the refused ones.
func (w *workloadFleet) waitStuck(ctx context.Context, c kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for _, p := range w.pods {
		if p.state == runs {
			continue
		}
		for {
			got, err := c.CoreV1().Pods(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("pod %s: %w", p.key(), err)
			}
			if (p.state == unplaced && unschedulable(got) && got.Spec.NodeName == "") || (p.state == refusedPod && got.Status.Phase == corev1.PodFailed) {
				break
			}
			if err := sleep(ctx, time.Second); err != nil {
				return fmt.Errorf("pod %s not yet refused by the scheduler or failed by KWOK: %w", p.key(), err)
			}
		}
	}
	return nil
}

// workloadJudges are the workload side's commands the bench times, each
// with its exit codes (pods: 1, the stuck few are findings) and the check
// of its text.
func (w *workloadFleet) workloadJudges(fleet []fleetNode) []struct {
	cmd   string
	codes []int
	check func([]byte) string
} {
	return []struct {
		cmd   string
		codes []int
		check func([]byte) string
	}{
		{"capacity", []int{0}, w.checkCapacity(fleet)},
		{"pods", []int{1}, w.checkPods},
	}
}

// contenders are the workload side's: gpuops capacity, pods and collect,
// each against its floor (the same LISTs, bench/floor -path), and health,
// capacity and pods read --from a bundle collect wrote before the rounds,
// each against the same command live.
func (w *workloadFleet) contenders(bin func(string) string, fleet []fleetNode, ns, bundle string) []contender {
	floor := func(cmd string) contender {
		argv := []string{bin("floor")}
		for _, p := range judgeReads(ns, cmd) {
			argv = append(argv, "-path", p)
		}
		return contender{name: fmt.Sprintf("floor of %s (its %d requests, protobuf)", cmd, len(argv)/2), argv: argv, codes: []int{0}}
	}
	// pods' -n is the pods' namespace, as kubectl's: the operator's has a
	// flag of its own.
	live := map[string][]string{
		"capacity": {bin("gpuops"), "-n", ns, "capacity"},
		"pods":     {bin("gpuops"), "pods", "--operator-namespace", ns},
	}
	var cs []contender
	from := []contender{{name: healthJudge, argv: []string{"health"}, codes: []int{0, 1}, check: checkHealth(fleet)}} // live in lineUp
	for _, j := range w.workloadJudges(fleet) {
		f := floor(j.cmd)
		cs = append(cs, f, contender{name: "gpuops " + j.cmd, argv: live[j.cmd], codes: j.codes, check: j.check, against: f.name})
		from = append(from, contender{name: "gpuops " + j.cmd, argv: []string{j.cmd}, codes: j.codes, check: j.check})
	}
	f := floor("collect")
	cs = append(cs, f, contender{name: "gpuops collect -o FILE.json", argv: []string{bin("gpuops"), "-n", ns, "collect", "-o", strings.TrimSuffix(bundle, ".json") + "-timed.json"},
		codes: []int{0}, against: f.name})
	// The operator's namespace --from takes from the bundle's header.
	for _, c := range from {
		cs = append(cs, contender{name: c.name + " --from BUNDLE", argv: []string{bin("gpuops"), c.argv[0], "--from", bundle},
			codes: c.codes, check: c.check, against: c.name})
	}
	return cs
}

// judgeReads are the requests gpuops capacity, pods and collect make, as
// pkg/snapshot/read (Snapshot with health's options, GPUPods, Warnings;
// the operator's paths in operator.go) and pkg/collect make them, each
// once, unpaged: the operator namespace's pods in one LIST where health
// reads them in parts; the Failed pods once, which capacity and pods list
// twice (for health, for the workloads); collect's pods as it lists them
// (pkg/collect), by phase. collect asks a page of 500 at a time, protobuf
// but for the custom resources; the floor what the server has, unpaged.
func judgeReads(ns, cmd string) []string {
	q := func(path, param, value string) string { return path + "?" + param + "=" + url.QueryEscape(value) }
	operator := []string{
		"/api/v1/nodes",
		"/apis/apps/v1/namespaces/" + ns + "/daemonsets",
		q("/apis/apps/v1/namespaces/"+ns+"/deployments", "labelSelector", read.OperatorSelector),
		"/apis/nvidia.com/v1/clusterpolicies",
		"/apis/nvidia.com/v1alpha1/nvidiadrivers",
		"/api/v1/namespaces/" + ns + "/configmaps/" + rehearsal.SharingConfigMap,
		"/api/v1/namespaces/" + ns + "/configmaps/" + rehearsal.MIGConfigMap,
		q("/apis/resource.k8s.io/v1/resourceslices", "fieldSelector", "spec.driver="+snapshot.DRADriverName),
		"/apis/resource.k8s.io/v1/resourceclaims",
		"/apis/resource.k8s.io/v1/deviceclasses",
	}
	if cmd == "collect" {
		return append(operator,
			"/apis/apps/v1/namespaces/"+ns+"/controllerrevisions",
			q("/api/v1/events", "fieldSelector", read.PodWarnings),
			q("/api/v1/events", "fieldSelector", read.UpgradeEvents),
			"/api/v1/namespaces/"+ns+"/pods",
			q("/api/v1/pods", "fieldSelector", read.Unended),
			q("/api/v1/pods", "fieldSelector", read.Failed),
			q("/api/v1/pods", "fieldSelector", "status.phase=Succeeded"))
	}
	out := append(operator,
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+rehearsal.PolicyGVR.GroupResource().String(),
		"/api/v1/namespaces/"+ns+"/pods",
		q("/api/v1/namespaces/"+ns+"/events", "fieldSelector", read.PodWarnings),
		q("/api/v1/pods", "fieldSelector", read.Unended),
		q("/api/v1/pods", "fieldSelector", read.Failed))
	if cmd == "pods" {
		out = append(out, q("/api/v1/events", "fieldSelector", read.PodWarnings))
	}
	return out
}
