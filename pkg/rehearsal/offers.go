package rehearsal

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/provision"
)

// The offer scenarios: how a node offers its GPUs, shared (time-slicing,
// MPS), partitioned (MIG) or through the DRA stack, written on one lab node
// as the components that write it would, then broken and healed case by
// case (Cases).
const (
	Sharing = "sharing"
	MIG     = "mig"
	DRA     = "dra"
)

// Who writes what. None of these components sets a field manager: the API
// server names each write after its client's user agent, the binary's name.
const (
	userLabel  = "kubectl-label"  // a user's kubectl label: the config labels
	userCreate = "kubectl-create" // a user's kubectl create configmap
	// GFD's labels reach the node through NFD: nfd-master patches them
	// (kubernetes-sigs/node-feature-discovery pkg/nfd-master/nfd-master.go, patchNode).
	nfdManager = "nfd-master"
	// The kubelet writes the node's status, the device plugin's resources
	// in capacity and allocatable among it.
	kubeletManager = "kubelet"
	// The DRA kubelet plugin's ResourceSlice controller creates and updates
	// its slices (k8s.io/dynamic-resource-allocation v0.37.2
	// resourceslice/resourceslicecontroller.go).
	draPluginManager = "gpu-kubelet-plugin"
)

// MIGStuckAfter is the --stuck-after the MIG rehearsal judges with, so that
// its aborted MIG change turns stuck within the rehearsal.
const MIGStuckAfter = 3 * time.Second

// Case is one row of an offer scenario's table: what goes wrong on the
// node, the cause gpuops health must name there while it is broken, and the
// writes that set it up, break it and heal it (gpuops: READY again).
type Case struct {
	Name    string // in words
	Cause   string // the health cause code
	Operand string // the operand the cause is of
	before  []act  // the node READY after each
	brk     act
	heal    act
}

// act is one write of a scenario, as the component that makes it would
// make it; it says what it did.
type act func(context.Context, *offer) (string, error)

// scenario is an offer scenario: the objects it sets up, the node READY
// after each, then its cases.
type scenario struct {
	setup      []act
	cases      []Case
	stuckAfter time.Duration // of its judging; pipeline.DefaultStuckAfter if 0
}

func offerScenario(name string) (scenario, bool) {
	switch name {
	case Sharing:
		return sharingScenario, true
	case MIG:
		return migScenario, true
	case DRA:
		return draScenario, true
	case Workloads:
		return workloadsScenario, true
	}
	return scenario{}, false
}

// Cases is the table of an offer scenario, in the order it walks them.
func Cases(name string) []Case {
	sc, _ := offerScenario(name)
	return sc.cases
}

// JudgingOf is how gpuops judges while the named scenario runs, as
// Narrated narrates it.
func JudgingOf(name, namespace string) pipeline.Options {
	o := pipeline.Options{Namespace: namespace, StuckAfter: pipeline.DefaultStuckAfter, Health: true}
	if sc, ok := offerScenario(name); ok && sc.stuckAfter != 0 {
		o.StuckAfter = sc.stuckAfter
	}
	if name == DriverUpgrade {
		o.Upgrades = true
	}
	return o
}

// offer is an offer scenario under way on one node.
type offer struct {
	kit
	o    Options
	dyn  dynamic.Interface
	sc   scenario
	node *corev1.Node // as it was before the scenario
	n    int
	// what to take back
	owned      map[string]string // gpuops's labels of the node
	wrote      map[string]bool   // label keys written
	advertised map[string]bool   // resources written in the status
	policy     *Installed
	configMaps []string
	daemonSets []string
	slices     int   // ResourceSlices published, named by index
	generation int64 // of the node's pool
	// the workloads scenario's: its pods and namespace (nil in the others),
	// and the pods the act under way made or waited for (Step.Pods)
	work  *workloads
	shown []string
}

// RunOffer rehearses an offer scenario on the first node of o.Nodes (all
// nodes when empty), in natural order, that gpuops health finds READY. It
// checks everything first (Check): when it returns an error before its
// first step, it changed nothing. A walk that fails half-way still cleans up
// what it wrote before it returns the error.
func RunOffer(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface, name string, o Options) error {
	sc, ok := offerScenario(name)
	if !ok {
		return Known(name)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if err := Check(ctx, c, dyn, name); err != nil {
		return err
	}
	f := &offer{kit: kit{c: c, namespace: o.Namespace, timeout: o.Timeout}, o: o, dyn: dyn, sc: sc,
		wrote: map[string]bool{}, advertised: map[string]bool{}}
	if name == Workloads {
		f.work = &workloads{}
	}
	if err := f.prepare(ctx, name); err != nil {
		return err
	}
	if err := f.walk(ctx); err != nil {
		f.o.Step = nil
		if cerr := f.cleanUp(ctx); cerr != nil {
			return fmt.Errorf("%w (and the clean-up: %v)", err, cerr)
		}
		return err
	}
	return nil
}

// Check says why a scenario cannot run on the cluster, before anything is
// written: a ClusterPolicy already there (sharing and mig write their own),
// resource.k8s.io/v1 not served (dra), its namespace there (workloads).
func Check(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface, name string) error {
	switch name {
	case Sharing, MIG:
		list, err := dyn.Resource(PolicyGVR).List(ctx, metav1.ListOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("list clusterpolicies.nvidia.com: %w", err)
		case len(list.Items) > 0:
			return fmt.Errorf("ClusterPolicy %s exists: the %s rehearsal writes one of its own, on a cluster without one (the lab)", list.Items[0].GetName(), name)
		}
	case DRA:
		res, err := c.Discovery().ServerResourcesForGroupVersion("resource.k8s.io/v1")
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("discover resource.k8s.io/v1: %w", err)
		}
		if res == nil || !slices.ContainsFunc(res.APIResources, func(r metav1.APIResource) bool { return r.Name == "resourceslices" }) {
			return fmt.Errorf("the cluster does not serve resourceslices.resource.k8s.io/v1: the %s rehearsal publishes ResourceSlices (Kubernetes 1.34 or later)", name)
		}
	case Workloads:
		_, err := c.CoreV1().Namespaces().Get(ctx, WorkloadsNamespace, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Errorf("namespace %s exists: the %s rehearsal makes its pods in a namespace of its own and deletes it", WorkloadsNamespace, name)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("namespace %s: %w", WorkloadsNamespace, err)
		}
	}
	return nil
}

// prepare picks the node and keeps what the clean-up restores.
func (f *offer) prepare(ctx context.Context, name string) error {
	judging := JudgingOf(name, f.o.Namespace)
	r, err := pipeline.Run(ctx, f.c, judging)
	if err != nil {
		return err
	}
	var ready []string
	for _, v := range r.Nodes {
		if v.GPU() && v.Health.Usable && (len(f.o.Nodes) == 0 || slices.Contains(f.o.Nodes, v.Node)) {
			ready = append(ready, v.Node)
		}
	}
	if len(ready) == 0 {
		return fmt.Errorf("no node of %s is READY in gpuops health: the %s rehearsal needs one to break and heal", orAll(f.o.Nodes), name)
	}
	slices.SortFunc(ready, judge.NaturalCompare)
	if f.work != nil {
		f.work.others = ready[1:]
	}
	if f.node, err = f.c.CoreV1().Nodes().Get(ctx, ready[0], metav1.GetOptions{}); err != nil {
		return fmt.Errorf("node %s: %w", ready[0], err)
	}
	mine, err := corev1ac.ExtractNode(f.node, provision.FieldManager)
	if err != nil {
		return fmt.Errorf("node %s: %w", ready[0], err)
	}
	f.owned = mine.Labels
	return nil
}

func orAll(nodes []string) string {
	if len(nodes) == 0 {
		return "the cluster"
	}
	return strings.Join(nodes, ", ")
}

// walk sets up, then breaks and heals each case, then cleans up.
func (f *offer) walk(ctx context.Context) error {
	for _, a := range f.sc.setup {
		if err := f.act(ctx, a, "", false); err != nil {
			return err
		}
	}
	for _, c := range f.sc.cases {
		for _, a := range c.before {
			if err := f.act(ctx, a, c.Name, false); err != nil {
				return err
			}
		}
		if err := f.act(ctx, c.brk, c.Name, true); err != nil {
			return err
		}
		if err := f.act(ctx, c.heal, c.Name, false); err != nil {
			return err
		}
	}
	return f.cleanUp(ctx)
}

func (f *offer) act(ctx context.Context, a act, name string, broken bool) error {
	f.shown = nil
	what, err := a(ctx, f)
	if err != nil {
		return err
	}
	return f.step(ctx, Step{Node: f.node.Name, Case: name, Broken: broken, What: what, Pods: f.shown})
}

func (f *offer) step(ctx context.Context, s Step) error {
	f.n++
	s.N = f.n
	if f.o.Step == nil {
		return nil
	}
	return f.o.Step(ctx, s)
}

// label writes node labels as manager; "" takes one off.
func (f *offer) label(ctx context.Context, manager string, labels map[string]string) error {
	set := map[string]any{}
	for k, v := range labels {
		f.wrote[k] = true
		set[k] = v
		if v == "" {
			set[k] = nil
		}
	}
	return f.patchNodeAs(ctx, f.node.Name, manager, map[string]any{"metadata": map[string]any{"labels": set}})
}

// advertise writes the node's capacity and allocatable of these resources
// as the kubelet does once the device plugin (re)registers them.
func (f *offer) advertise(ctx context.Context, counts map[string]int64) error {
	q := map[string]any{}
	for name, n := range counts {
		f.advertised[name] = true
		q[name] = resource.NewQuantity(n, resource.DecimalSI).String()
	}
	return f.patchNodeAs(ctx, f.node.Name, kubeletManager, map[string]any{"status": map[string]any{"capacity": q, "allocatable": q}}, "status")
}

// createPolicy installs the ClusterPolicy with this spec, as the Helm chart
// does and the operator sets its status.
func (f *offer) createPolicy(ctx context.Context, spec map[string]any) error {
	in, err := InstallPolicy(ctx, f.dyn, Policy(PolicyName, spec), f.o.Namespace, f.o.Timeout)
	if err != nil {
		return err
	}
	f.policy = in
	return nil
}

// createConfigMap creates a ConfigMap as a user does.
func (f *offer) createConfigMap(ctx context.Context, cm *corev1.ConfigMap) error {
	if _, err := f.c.CoreV1().ConfigMaps(f.o.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: userCreate}); err != nil {
		return fmt.Errorf("create ConfigMap %s/%s: %w", f.o.Namespace, cm.Name, err)
	}
	f.configMaps = append(f.configMaps, cm.Name)
	return nil
}

// createDaemonSet creates a DaemonSet as the operator renders it, labelled
// managed-by gpu-operator as its Helm chart labels every operand's.
func (f *offer) createDaemonSet(ctx context.Context, name, image string, nodeSelector map[string]string) (*appsv1.DaemonSet, error) {
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.o.Namespace, Labels: map[string]string{operand.ManagedByLabel: "gpu-operator"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: nodeSelector, Containers: []corev1.Container{{Name: name, Image: image,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			},
		},
	}
	ds, err := f.c.AppsV1().DaemonSets(f.o.Namespace).Create(ctx, ds, metav1.CreateOptions{FieldManager: operand.UpgradeManager})
	if err != nil {
		return nil, fmt.Errorf("create DaemonSet %s/%s: %w", f.o.Namespace, name, err)
	}
	f.daemonSets = append(f.daemonSets, name)
	return ds, nil
}

// podReady waits until the DaemonSet's pod on the node, other than old, is
// Ready; it returns its name.
func (f *offer) podReady(ctx context.Context, ds *appsv1.DaemonSet, old *corev1.Pod) (string, error) {
	var made string
	err := f.waitPod(ctx, f.node.Name, ds, "a Ready pod of DaemonSet "+ds.Name, func(p *corev1.Pod) bool {
		made = p.Name
		return (old == nil || p.UID != old.UID) && ready(p)
	})
	return made, err
}

// publish writes the node's pool as the DRA kubelet plugin's ResourceSlice
// controller does: slice i created or updated, those past the last deleted.
func (f *offer) publish(ctx context.Context, pool []Slice) error {
	rc := f.c.ResourceV1().ResourceSlices()
	for i, s := range pool {
		want := ResourceSlice(f.node, i, s)
		if i >= f.slices {
			if _, err := rc.Create(ctx, want, metav1.CreateOptions{FieldManager: draPluginManager}); err != nil {
				return fmt.Errorf("create ResourceSlice %s: %w", want.Name, err)
			}
			continue
		}
		have, err := rc.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("ResourceSlice %s: %w", want.Name, err)
		}
		have.Spec = want.Spec
		if _, err := rc.Update(ctx, have, metav1.UpdateOptions{FieldManager: draPluginManager}); err != nil {
			return fmt.Errorf("update ResourceSlice %s: %w", want.Name, err)
		}
	}
	for i := len(pool); i < f.slices; i++ {
		name := ResourceSlice(f.node, i, Slice{}).Name
		if err := rc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ResourceSlice %s: %w", name, err)
		}
	}
	f.slices = len(pool)
	return nil
}

// cleanUp puts the cluster back as the lab left it: first the node's labels
// and resources as they were, its labels under gpuops's claim alone again
// and no writer's claim left that was not there before (the node then asks
// for nothing the scenario added), then the ResourceSlices, the DaemonSets
// and their pods, the ConfigMaps and the ClusterPolicy gone.
func (f *offer) cleanUp(ctx context.Context) error {
	if len(f.wrote) > 0 || len(f.advertised) > 0 {
		what := "labels"
		if len(f.advertised) > 0 {
			what = "labels, capacity and allocatable"
		}
		if err := f.restoreNode(ctx); err != nil {
			return err
		}
		if err := f.step(ctx, Step{What: fmt.Sprintf("clean-up: %s's %s as before, its labels under %s's claim alone as up applied them",
			f.node.Name, what, provision.FieldManager)}); err != nil {
			return err
		}
	}
	var gone []string
	if f.work != nil {
		made, err := f.cleanUpWorkloads(ctx)
		if err != nil {
			return err
		}
		gone = append(gone, made...)
	}
	if f.slices > 0 {
		if err := f.publish(ctx, nil); err != nil {
			return err
		}
		gone = append(gone, "the ResourceSlices of "+f.node.Name)
	}
	for _, name := range f.daemonSets {
		if err := f.deleteDaemonSet(ctx, name); err != nil {
			return err
		}
	}
	if len(f.daemonSets) > 0 {
		gone = append(gone, "DaemonSet "+strings.Join(f.daemonSets, ", ")+" and its pods")
		f.daemonSets = nil
	}
	for _, name := range f.configMaps {
		if err := f.c.CoreV1().ConfigMaps(f.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ConfigMap %s/%s: %w", f.o.Namespace, name, err)
		}
	}
	if len(f.configMaps) > 0 {
		gone = append(gone, "ConfigMap "+strings.Join(f.configMaps, ", "))
		f.configMaps = nil
	}
	if f.policy != nil {
		if err := f.policy.Remove(ctx); err != nil {
			return err
		}
		gone = append(gone, "ClusterPolicy "+PolicyName)
		if f.policy.crd != "" {
			gone = append(gone, "CRD "+f.policy.crd)
		}
		f.policy = nil
	}
	if len(gone) == 0 {
		return nil
	}
	return f.step(ctx, Step{What: "clean-up: deleted " + strings.Join(gone, "; ")})
}

// restoreNode puts back the node's labels and resources as they were and
// drops the claims of the writers the scenario played.
func (f *offer) restoreNode(ctx context.Context) error {
	labels := map[string]any{}
	for k := range f.wrote {
		if _, mine := f.owned[k]; !mine {
			labels[k] = nil
			if v, ok := f.node.Labels[k]; ok {
				labels[k] = v
			}
		}
	}
	if err := f.patchNodeAs(ctx, f.node.Name, provision.FieldManager, map[string]any{"metadata": map[string]any{"labels": labels}}); err != nil {
		return err
	}
	capacity, allocatable := map[string]any{}, map[string]any{}
	for name := range f.advertised {
		capacity[name], allocatable[name] = nil, nil
		if q, ok := f.node.Status.Capacity[corev1.ResourceName(name)]; ok {
			capacity[name] = q.String()
		}
		if q, ok := f.node.Status.Allocatable[corev1.ResourceName(name)]; ok {
			allocatable[name] = q.String()
		}
	}
	if err := f.patchNodeAs(ctx, f.node.Name, kubeletManager, map[string]any{"status": map[string]any{"capacity": capacity, "allocatable": allocatable}}, "status"); err != nil {
		return err
	}
	if err := f.giveBack(ctx, f.node.Name, f.owned, operand.MIGChange.Manager); err != nil {
		return err
	}
	if err := f.dropNewManagers(ctx); err != nil {
		return err
	}
	f.wrote, f.advertised = map[string]bool{}, map[string]bool{}
	return nil
}

// dropNewManagers drops the node's field managers that were not there
// before the scenario: the writers it played.
func (f *offer) dropNewManagers(ctx context.Context) error {
	before := managers(f.node)
	now, err := f.c.CoreV1().Nodes().Get(ctx, f.node.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, m := range slices.Sorted(maps.Keys(managers(now))) {
		if !before[m] {
			if err := f.dropManager(ctx, f.node.Name, m); err != nil {
				return err
			}
		}
	}
	return nil
}

func managers(n *corev1.Node) map[string]bool {
	out := map[string]bool{}
	for _, e := range n.ManagedFields {
		out[e.Manager] = true
	}
	return out
}

// deleteDaemonSet deletes a DaemonSet the scenario made and waits until its
// pods are gone, then the DaemonSet itself (foreground deletion keeps it
// until then): a DaemonSet left a moment without pods would read as its
// operand missing.
func (f *offer) deleteDaemonSet(ctx context.Context, name string) error {
	fg := metav1.DeletePropagationForeground
	if err := f.c.AppsV1().DaemonSets(f.o.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DaemonSet %s/%s: %w", f.o.Namespace, name, err)
	}
	lw := cache.NewFilteredListWatchFromClient(f.c.CoreV1().RESTClient(), "pods", f.o.Namespace, func(o *metav1.ListOptions) {
		o.LabelSelector = "app=" + name
	})
	if err := f.wait(ctx, "the pods of DaemonSet "+name+" to be gone", lw, &corev1.Pod{}, func(objs []any) bool { return len(objs) == 0 }); err != nil {
		return err
	}
	dss := cache.NewListWatchFromClient(f.c.AppsV1().RESTClient(), "daemonsets", f.o.Namespace, fields.OneTermEqualSelector("metadata.name", name))
	return f.wait(ctx, "DaemonSet "+name+" to be gone", dss, &appsv1.DaemonSet{}, func(objs []any) bool { return len(objs) == 0 })
}
