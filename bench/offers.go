package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/rehearsal"
	"github.com/gpuops/gpuops/pkg/rehearsal/configs"
	verdicts "github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The offers (-offers): the fleet dressed as a GPU Operator install whose
// nodes offer their GPUs in the ways `gpuops health` reads beyond the
// device plugin's plain nvidia.com/gpu: a ClusterPolicy naming the device
// plugin's sharing configs and the MIG manager's layouts (one GET each),
// nodes time-slicing their GPUs, nodes partitioned by MIG, and nodes
// running the DRA kubelet plugin, each publishing a ResourceSlice of its 8
// GPUs (one LIST). Per 500 nodes one node of each kind is broken, so that
// health's output shows each read was made and judged.

// offer is how a fleet node offers its GPUs.
type offer int

const (
	plain   offer = iota // nvidia.com/gpu from the device plugin, as without -offers
	sharing              // time-slicing, 4 replicas renamed nvidia.com/gpu.shared
	mig                  // MIG layout all-1g.10gb, mixed strategy
	dra                  // the DRA kubelet plugin and a ResourceSlice of 8 GPUs
)

// The install's objects are the rehearsals' (pkg/rehearsal fixtures.go).
// The ClusterPolicy is cluster-scoped: each bench fleet has a control plane
// of its own (hack/cluster.sh), and the policy a name of the bench's.
const (
	benchPolicy = "gpuops-bench"
	sharingKey  = "ts-renamed" // of configs.Sharing: time-slicing renamed nvidia.com/gpu.shared
	migLayout   = "all-1g.10gb"
	gpusPerNode = 8
	migPerGPU   = 7 // 1g.10gb devices of all-1g.10gb on one GPU
)

// draDriver is the DRA kubelet plugin as the operator's catalog has it.
func draDriver() operand.Operand {
	o, err := operand.Lookup(operand.Real, operand.DRADriver)
	if err != nil {
		panic(err) // the catalog is code
	}
	return o
}

// roster is what the judges judge the fleet with: the lab's five, and with
// the offers the DRA kubelet plugin, which --discover (on by default beside
// a ClusterPolicy) finds by its DaemonSet.
func roster(offers bool) []operand.Operand {
	if !offers {
		return operand.Lab
	}
	return append(operand.Lab[:len(operand.Lab):len(operand.Lab)], draDriver())
}

// offerOf is the offer of healthy GPU node number i: a tenth of the fleet
// each shares, partitions and runs the DRA stack.
func offerOf(i int) offer {
	switch i % 10 {
	case 1:
		return sharing
	case 2:
		return mig
	case 5:
		return dra
	}
	return plain
}

// offerBroken reports whether the node is its 500's broken node of its
// offer: the config not applied, the MIG layout failed, 2 devices tainted.
func (f fleetNode) offerBroken() bool { return f.offer != plain && f.index%500 < 10 }

// offerCause is the cause health must give the node: "" for READY.
func (f fleetNode) offerCause() (code, op string) {
	if !f.offerBroken() {
		return "", ""
	}
	switch f.offer {
	case sharing:
		return health.SharingNotApplied, operand.DevicePlugin
	case mig:
		return health.MIGFailed, operand.DevicePlugin // no MIG manager DaemonSet: its state is judged on the device plugin
	}
	return health.DevicesTainted, operand.DRADriver
}

// dressOffer gives a node of an offer the labels and devices the device
// plugin, GFD, the MIG manager and the operator's labeller would write.
func (f fleetNode) dressOffer(n *corev1.Node) {
	if f.offer == plain {
		// The device plugin's plain GPUs, where it runs: a node whose plugin
		// is ready and advertises none is unusable to health
		// (gpus-not-advertised), as the bench's first fleets were.
		if f.role == gpu && f.asks(operand.Lab.DevicePlugin()) {
			n.Status.Capacity[snapshot.GPUResource] = *resource.NewQuantity(gpusPerNode, resource.DecimalSI)
			n.Status.Allocatable[snapshot.GPUResource] = n.Status.Capacity[snapshot.GPUResource]
		}
		return
	}
	n.Labels[operand.GPUCountLabel] = fmt.Sprint(gpusPerNode)
	devices := corev1.ResourceList{}
	switch f.offer {
	case sharing:
		n.Labels[operand.DevicePluginConfigLabel] = sharingKey
		name, count := snapshot.GPUResource+snapshot.SharedSuffix, gpusPerNode*configs.Replicas
		if f.offerBroken() {
			name, count = snapshot.GPUResource, gpusPerNode // the config not applied: the physical GPUs
		}
		devices[corev1.ResourceName(name)] = *resource.NewQuantity(int64(count), resource.DecimalSI)
	case mig:
		n.Labels[operand.MIGConfigLabel] = migLayout
		n.Labels[operand.MIGStrategyLabel] = "mixed"
		n.Labels[operand.MIGChange.StateLabel] = operand.MIGSuccess
		if f.offerBroken() {
			n.Labels[operand.MIGChange.StateLabel] = operand.MIGFailed
		}
		devices[corev1.ResourceName(snapshot.MIGResource("1g.10gb"))] = *resource.NewQuantity(gpusPerNode*migPerGPU, resource.DecimalSI)
	case dra:
		n.Labels[draDriver().LabelKey()] = "true"
		devices[snapshot.GPUResource] = *resource.NewQuantity(gpusPerNode, resource.DecimalSI)
	}
	for name, q := range devices {
		n.Status.Capacity[name], n.Status.Allocatable[name] = q, q
	}
}

// slice is the ResourceSlice the DRA kubelet plugin publishes for the
// node: one pool of one slice, 8 GPUs (2 of them tainted on a broken node).
func (f fleetNode) slice(n *corev1.Node) *resourcev1.ResourceSlice {
	var taints []resourcev1.DeviceTaint
	if f.offerBroken() {
		taints = []resourcev1.DeviceTaint{rehearsal.FatalXID, rehearsal.FatalXID}
	}
	return rehearsal.ResourceSlice(n, 0, rehearsal.Slice{Generation: 1, Count: 1, Devices: rehearsal.Devices("gpu", "gpu", gpusPerNode, taints...)})
}

// applyOffers creates the install's objects: the ClusterPolicy CRD and a
// policy naming the ConfigMaps, the ConfigMaps, the DRA kubelet plugin's
// DaemonSet and the nodes' slices.
func applyOffers(ctx context.Context, c kubernetes.Interface, kubeconfig, namespace string, fleet []fleetNode) error {
	dyn, err := dynamicClient(kubeconfig)
	if err != nil {
		return err
	}
	for _, cm := range []*corev1.ConfigMap{rehearsal.SharingConfigs(namespace), rehearsal.MIGConfigs(namespace)} {
		if _, err := c.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create configmap %s: %w", cm.Name, err)
		}
	}
	policy := rehearsal.Policy(benchPolicy, rehearsal.OfferSpec(rehearsal.SharingConfigMap, rehearsal.MIGConfigMap))
	if _, err := rehearsal.InstallPolicy(ctx, dyn, policy, namespace, time.Minute); err != nil {
		return err
	}
	o := draDriver()
	ds := testcluster.DaemonSet(namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "16Mi")
	if _, err := c.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create DaemonSet %s: %w", o.DaemonSet, err)
	}
	// The slices are owned by their nodes, as the kubelet plugin's are:
	// their UIDs come from one LIST.
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: o.LabelKey() + "=true"})
	if err != nil {
		return err
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, f := range fleet {
		if f.offer != dra {
			continue
		}
		n, ok := byName[f.name]
		if !ok {
			return fmt.Errorf("node %s has no label %s=true", f.name, o.LabelKey())
		}
		g.Go(func() error {
			if _, err := c.ResourceV1().ResourceSlices().Create(gctx, f.slice(n), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create the ResourceSlice of node %s: %w", f.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// dressedForOffers reports whether a kept fleet was built with -offers: its
// ClusterPolicy is there.
func dressedForOffers(ctx context.Context, kubeconfig string) (bool, error) {
	dyn, err := dynamicClient(kubeconfig)
	if err != nil {
		return false, err
	}
	_, err = dyn.Resource(rehearsal.PolicyGVR).Get(ctx, benchPolicy, metav1.GetOptions{})
	if apierrors.IsNotFound(err) { // no such policy, or no CRD
		return false, nil
	}
	return err == nil, err
}

func dynamicClient(kubeconfig string) (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	return dynamic.NewForConfig(cfg)
}

// offerCodes are the causes of how a node offers its GPUs.
var offerCodes = []string{health.SharingConfigUnknown, health.SharingNotApplied, health.MPSDaemonNotReady,
	health.MIGConfigUnknown, health.MIGFailed, health.MIGStuck, health.MIGLayoutMismatch,
	health.DevicesNotPublished, health.PoolIncomplete, health.DevicesTainted}

// checkHealth checks health's text against the fleet: each healthy GPU
// node READY, each node of an offer READY or the cause its breakage must
// give, and no offer cause on any other node.
func checkHealth(fleet []fleetNode) func([]byte) string {
	return func(out []byte) string {
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		byName := map[string]fleetNode{}
		offered := 0
		for _, f := range fleet {
			if f.role == gpu {
				byName[f.name] = f
			}
			if f.offer != plain {
				offered++
			}
		}
		seen := 0
		for i, line := range lines {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				return fmt.Sprintf("**WRONG** at line %d: %q", i+1, line)
			}
			f, ok := byName[fields[0]]
			if !ok {
				if len(fields) >= 3 && slices.Contains(offerCodes, fields[2]) {
					return fmt.Sprintf("**WRONG** at line %d: %q, a node without offer", i+1, line)
				}
				continue
			}
			seen++
			want := fields[0] + " " + verdicts.Ready
			if code, op := f.offerCause(); code != "" {
				want = fmt.Sprintf("%s %s %s %s", fields[0], verdicts.Unusable, code, op)
			}
			if line != want {
				return fmt.Sprintf("**WRONG** at line %d: got %q, want %q", i+1, line, want)
			}
		}
		if seen != len(byName) {
			return fmt.Sprintf("**WRONG**: %d of the %d healthy GPU nodes judged", seen, len(byName))
		}
		return fmt.Sprintf("as expected (%d lines; the %d GPU nodes checked, %d of them of an offer)", len(lines), seen, offered)
	}
}
