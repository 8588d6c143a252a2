// Package rehearsal replays on a cluster without a GPU Operator, the KWOK
// lab, what the operator's components and its users would write, one write
// at a time, so that what gpuops says can be seen, and tested, at every step
// (`gpuops lab --scenario`): a driver upgrade, as the operator's upgrade
// controller (NVIDIA/k8s-operator-libs pkg/upgrade, run by gpu-operator
// controllers/upgrade_controller.go) and the driver pod's k8s-driver-manager
// would walk it; how a node offers its GPUs, shared, partitioned or through
// the DRA stack, each health cause broken and healed (offers.go, sharing.go,
// mig.go, dra.go); GPU pods that do not run, each cause gpuops why names met
// and healed (workloads.go). The objects they write are in fixtures.go, which
// the integration tests build from too.
//
// The driver upgrade's walk: a new driver template (a newer image, and the OnDelete update
// strategy the operator renders its driver DaemonSet with, so that the
// DaemonSet controller replaces a driver pod only once it is deleted); every
// node marked upgrade-required; then one node at a time (maxParallelUpgrades
// 1, the policy's default) its states in order, each written with the
// controller's field manager and an Event as its recorder files one, the
// cordon, the driver pod deleted so the real DaemonSet controller makes it
// again at the new revision, the new pod's driver manager pausing the other
// operands and resuming them, validation, the uncordon. One node can be made
// to fail: its new driver pod crash-loops past the controller's restart limit
// (a KWOK stage of hack/kwokctl.yaml), the controller fails it, and then, the
// cause fixed, its pod is made again and the controller finishes it. Last, a
// clean-up puts the cluster back as it was: the driver template rolled back
// by the DaemonSet controller, the controller's labels and annotations taken
// off, the deploy labels back under gpuops.
package rehearsal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/provision"
)

// DriverUpgrade is the scenario's name (gpuops lab --scenario).
const DriverUpgrade = "driver-upgrade"

// Scenarios are the scenarios gpuops lab can run after the lab.
var Scenarios = []string{DriverUpgrade, Sharing, MIG, DRA, Workloads}

// UpgradeVersion is the driver version the new template runs, unless
// Options.Image says otherwise.
const UpgradeVersion = "570.172.08"

// DefaultTimeout bounds each wait of the walk unless Options.Timeout is set.
const DefaultTimeout = 2 * time.Minute

// The KWOK stage annotations (hack/kwokctl.yaml) that hold a pod
// crash-looping with as many restarts as the controller fails a node past.
const (
	podStateAnnotation = "gpuops.test/pod-state"
	restartsAnnotation = "gpuops.test/restarts"
)

// Options say what to rehearse.
type Options struct {
	Namespace string // of the driver DaemonSet
	// Nodes are the nodes the walk may take: those of them that run a pod
	// of the driver DaemonSet, in natural name order; empty: every node that
	// runs one.
	Nodes []string
	// Image is the driver image of the new template; empty: the current
	// one's at UpgradeVersion.
	Image string
	// FailLast makes the last node of the walk fail: its new driver pod
	// crash-loops. A failed node keeps its slot of maxParallelUpgrades, so
	// a node walked after it would never start: the failing one goes last.
	FailLast bool
	Timeout  time.Duration // of each wait; DefaultTimeout if zero
	// Step, when set, is told of each step once what it did has settled
	// (the pods it waits for are there or gone), before the next one: an
	// error stops the walk.
	Step func(context.Context, Step) error
}

// Step is one thing the walk did.
type Step struct {
	N    int    // from 1
	Node string // the node it was done to; empty for the whole walk
	// State is the node's upgrade state label after the step ("" for none).
	State string
	What  string // in words
	// Case is the offer scenario's case the step sets up, breaks or heals
	// (Cases); "" for the set-up before them and the clean-up.
	Case string
	// Broken: the step broke Case on Node; gpuops names its cause there
	// until the next step heals it.
	Broken bool
	// Pods are the GPU pods (namespace/name) the step made or waited for,
	// those gpuops why is asked about (the workloads scenario's).
	Pods []string
}

// rehearsal is a walk under way.
type rehearsal struct {
	kit
	o       Options
	ds      *appsv1.DaemonSet
	driver  string                       // the driver container's name
	image   string                       // its image before the walk
	nodes   []string                     // walked, in order
	fail    string                       // the node that fails; "" none
	owned   map[string]map[string]string // gpuops's labels of each walked node, before the walk
	state   map[string]string            // each walked node's state label
	initial map[string]bool              // walked nodes that were cordoned before their upgrade
	n       int
}

// Run rehearses the driver upgrade. It reads and checks everything first:
// when it returns an error before its first step (no driver DaemonSet, no
// node running its pods, the image already the new one), it changed nothing.
func Run(ctx context.Context, c kubernetes.Interface, o Options) error {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	r, err := prepare(ctx, c, o)
	if err != nil {
		return err
	}
	return r.walk(ctx)
}

func prepare(ctx context.Context, c kubernetes.Interface, o Options) (*rehearsal, error) {
	r := &rehearsal{kit: kit{c: c, namespace: o.Namespace, timeout: o.Timeout}, o: o, owned: map[string]map[string]string{}, state: map[string]string{}, initial: map[string]bool{}}
	name := operand.Lab.Driver().DaemonSet
	ds, err := c.AppsV1().DaemonSets(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("driver DaemonSet %s/%s: %w", o.Namespace, name, err)
	}
	r.ds = ds
	if len(ds.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("driver DaemonSet %s/%s has no container", o.Namespace, name)
	}
	r.driver, r.image = ds.Spec.Template.Spec.Containers[0].Name, ds.Spec.Template.Spec.Containers[0].Image
	if r.o.Image == "" {
		r.o.Image = bumpedImage(r.image)
	}
	if r.o.Image == r.image {
		return nil, fmt.Errorf("driver DaemonSet %s/%s already runs %s: nothing to upgrade to", o.Namespace, name, r.image)
	}
	pods, err := r.driverPods(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" && (len(o.Nodes) == 0 || slices.Contains(o.Nodes, p.Spec.NodeName)) && !slices.Contains(r.nodes, p.Spec.NodeName) {
			r.nodes = append(r.nodes, p.Spec.NodeName)
		}
	}
	if len(r.nodes) == 0 {
		return nil, fmt.Errorf("no node runs a pod of driver DaemonSet %s/%s: nothing to upgrade", o.Namespace, name)
	}
	slices.SortFunc(r.nodes, judge.NaturalCompare)
	if o.FailLast {
		r.fail = r.nodes[len(r.nodes)-1]
	}
	for _, n := range r.nodes {
		node, err := c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n, err)
		}
		mine, err := corev1ac.ExtractNode(node, provision.FieldManager)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n, err)
		}
		r.owned[n] = mine.Labels
	}
	return r, nil
}

// bumpedImage is the image at UpgradeVersion: the tag's version (before its
// first "-") replaced.
func bumpedImage(image string) string {
	repo, tag := image, ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, tag = image[:i], image[i+1:]
	}
	if _, rest, ok := strings.Cut(tag, "-"); ok {
		return repo + ":" + UpgradeVersion + "-" + rest
	}
	return repo + ":" + UpgradeVersion
}

func (r *rehearsal) walk(ctx context.Context) error {
	if err := r.bump(ctx); err != nil {
		return err
	}
	// The controller marks every node whose driver pod is out of date in
	// one pass (ProcessDoneOrUnknownNodes), then starts them within budget.
	for _, n := range r.nodes {
		if err := r.markRequired(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range r.nodes {
		if err := r.upgrade(ctx, n); err != nil {
			return err
		}
	}
	if r.fail != "" {
		if err := r.recover(ctx, r.fail); err != nil {
			return err
		}
	}
	return r.cleanUp(ctx)
}

// step tells Options.Step of what was just done.
func (r *rehearsal) step(ctx context.Context, node, format string, args ...any) error {
	r.n++
	if r.o.Step == nil {
		return nil
	}
	return r.o.Step(ctx, Step{N: r.n, Node: node, State: r.state[node], What: fmt.Sprintf(format, args...)})
}

// bump gives the driver DaemonSet its new template, as gpuops (it applied
// the lab's), and waits for the revision the DaemonSet controller makes.
func (r *rehearsal) bump(ctx context.Context) error {
	ds, err := r.applyDriver(ctx, r.o.Image, appsv1.OnDeleteDaemonSetStrategyType)
	if err != nil {
		return err
	}
	hash, err := r.latestRevision(ctx, ds)
	if err != nil {
		return err
	}
	return r.step(ctx, "", "driver DaemonSet %s: image %s -> %s, updateStrategy OnDelete as the operator renders it; new revision %s, every driver pod now runs an older template",
		ds.Name, r.image, r.o.Image, hash)
}

// markRequired: upgrade-required, and a node already cordoned remembered
// so that it stays cordoned at the end (ProcessDoneOrUnknownNodes).
func (r *rehearsal) markRequired(ctx context.Context, n string) error {
	node, err := r.c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
	if err != nil {
		return err
	}
	what := ""
	if node.Spec.Unschedulable {
		r.initial[n] = true
		if err := r.annotate(ctx, n, operand.UpgradeInitialUnschedulable, "true"); err != nil {
			return err
		}
		what = "; cordoned already, so annotated " + operand.UpgradeInitialUnschedulable + "=true"
	}
	return r.setState(ctx, n, operand.UpgradeRequired, what)
}

// upgrade walks one node from upgrade-required to upgrade-done, or to
// upgrade-failed for the failing one.
func (r *rehearsal) upgrade(ctx context.Context, n string) error {
	if err := r.setState(ctx, n, operand.UpgradeCordonRequired, ""); err != nil {
		return err
	}
	if !r.initial[n] {
		if err := r.cordon(ctx, n, true); err != nil {
			return err
		}
		if err := r.step(ctx, n, "%s: cordoned (spec.unschedulable=true)", n); err != nil {
			return err
		}
	}
	// No pod selector to wait for, no GPU pod to delete and drain off on
	// the lab: each of these states passes at the controller's next look.
	for _, s := range []string{operand.UpgradeWaitForJobsRequired, operand.UpgradePodDeletionRequired,
		operand.UpgradeDrainRequired, operand.UpgradePodRestartRequired} {
		if err := r.setState(ctx, n, s, ""); err != nil {
			return err
		}
	}
	if err := r.restartDriver(ctx, n, "the controller deleted driver pod"); err != nil {
		return err
	}
	if n == r.fail {
		return r.failNode(ctx, n)
	}
	// The lab has no operator validator: its new driver counts as
	// validated at once.
	if err := r.setState(ctx, n, operand.UpgradeValidationRequired, ""); err != nil {
		return err
	}
	return r.finish(ctx, n)
}

// failNode makes the new driver pod crash-loop past the controller's limit,
// and the controller fail the node (ProcessPodRestartNodes, isDriverPodFailing).
func (r *rehearsal) failNode(ctx context.Context, n string) error {
	pod, err := r.currentDriverPod(ctx, n)
	if err != nil {
		return err
	}
	restarts := operand.UpgradeMaxRestarts + 1
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"crash-loop",%q:"%d"}}}`, podStateAnnotation, restartsAnnotation, restarts)
	if _, err := r.c.CoreV1().Pods(r.o.Namespace).Patch(ctx, pod.Name, "application/merge-patch+json", []byte(patch),
		metav1.PatchOptions{FieldManager: provision.FieldManager}); err != nil {
		return fmt.Errorf("make driver pod %s crash-loop: %w", pod.Name, err)
	}
	err = r.waitDriverPod(ctx, n, "driver pod "+pod.Name+" to crash-loop past "+fmt.Sprint(operand.UpgradeMaxRestarts)+" restarts (hack/kwokctl.yaml's crash-loop stage; a cluster started before it has no gpuops.test/restarts: restart it)",
		func(p *corev1.Pod) bool { return p.Name == pod.Name && failing(p) })
	if err != nil {
		return err
	}
	if err := r.step(ctx, n, "%s: driver pod %s crash-loops: container %s restarted %d times, not Ready", n, pod.Name, r.driver, restarts); err != nil {
		return err
	}
	return r.setState(ctx, n, operand.UpgradeFailed, "; the driver pod restarted more than "+fmt.Sprint(operand.UpgradeMaxRestarts)+" times")
}

// recover: someone fixes what broke the driver and deletes the crash-looping
// pod; its successor is Ready, and the controller takes the failed node on
// (ProcessUpgradeFailedNodes).
func (r *rehearsal) recover(ctx context.Context, n string) error {
	if err := r.restartDriver(ctx, n, "the cause fixed, an admin deleted the crash-looping driver pod"); err != nil {
		return err
	}
	return r.finish(ctx, n)
}

// finish: uncordon-required, uncordoned, upgrade-done; a node cordoned
// before its upgrade goes straight to upgrade-done and stays cordoned
// (updateNodeToUncordonOrDoneState).
func (r *rehearsal) finish(ctx context.Context, n string) error {
	if r.initial[n] {
		if err := r.annotate(ctx, n, operand.UpgradeInitialUnschedulable, ""); err != nil {
			return err
		}
		return r.setState(ctx, n, operand.UpgradeDone, "; it was cordoned before its upgrade, so it stays cordoned ("+operand.UpgradeInitialUnschedulable+" removed)")
	}
	if err := r.setState(ctx, n, operand.UpgradeUncordonRequired, ""); err != nil {
		return err
	}
	if err := r.cordon(ctx, n, false); err != nil {
		return err
	}
	if err := r.step(ctx, n, "%s: uncordoned (spec.unschedulable=false)", n); err != nil {
		return err
	}
	return r.setState(ctx, n, operand.UpgradeDone, "")
}

// restartDriver deletes the node's driver pod, waits for the DaemonSet
// controller's new one at the latest revision, then plays its driver
// manager: the other operands paused until their pods are gone, then
// resumed until they run again (uninstallDriver: evictAllGPUOperatorComponents,
// rescheduleGPUOperatorComponents).
func (r *rehearsal) restartDriver(ctx context.Context, n, who string) error {
	old, err := r.currentDriverPod(ctx, n)
	if err != nil {
		return err
	}
	if err := r.c.CoreV1().Pods(r.o.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}}); err != nil {
		return fmt.Errorf("delete driver pod %s: %w", old.Name, err)
	}
	ds, err := r.c.AppsV1().DaemonSets(r.o.Namespace).Get(ctx, r.ds.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	hash, err := r.latestRevision(ctx, ds)
	if err != nil {
		return err
	}
	var made string
	err = r.waitDriverPod(ctx, n, "a new driver pod at revision "+hash,
		func(p *corev1.Pod) bool {
			made = p.Name
			return p.UID != old.UID && p.Labels[operand.RevisionHashLabel] == hash && ready(p)
		})
	if err != nil {
		return err
	}
	if err := r.step(ctx, n, "%s: %s %s; the DaemonSet controller made %s at revision %s", n, who, old.Name, made, hash); err != nil {
		return err
	}

	node, err := r.c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
	if err != nil {
		return err
	}
	paused := pauses(node.Labels)
	if len(paused) == 0 {
		return nil
	}
	if err := r.pause(ctx, operand.DriverUpgrade.Manager, n, paused, false); err != nil {
		return err
	}
	if err := r.step(ctx, n, "%s: the driver manager of %s paused %s (%s); their pods are gone",
		n, made, strings.Join(keys(paused), ", "), operand.DriverUpgrade.Value); err != nil {
		return err
	}
	if err := r.pause(ctx, operand.DriverUpgrade.Manager, n, resumes(paused), true); err != nil {
		return err
	}
	return r.step(ctx, n, "%s: the driver manager of %s resumed %s; their pods run again", n, made, strings.Join(keys(paused), ", "))
}

// cleanUp puts the cluster back as the lab left it: the driver template as
// gpuops applied it (the DaemonSet controller rolls the pods back itself),
// the controller's labels and annotations off, the deploy labels back
// under gpuops (the driver manager's writes took them over).
func (r *rehearsal) cleanUp(ctx context.Context) error {
	ds, err := r.applyDriver(ctx, r.image, "")
	if err != nil {
		return err
	}
	hash, err := r.latestRevision(ctx, ds)
	if err != nil {
		return err
	}
	for _, n := range r.nodes {
		if err := r.waitDriverPod(ctx, n, "the driver pod back at revision "+hash, func(p *corev1.Pod) bool {
			return p.Labels[operand.RevisionHashLabel] == hash && ready(p)
		}); err != nil {
			return err
		}
	}
	if err := r.step(ctx, "", "clean-up: driver DaemonSet %s back to image %s and its rolling update; the DaemonSet controller rolled the driver pods back to revision %s",
		ds.Name, r.image, hash); err != nil {
		return err
	}
	for _, n := range r.nodes {
		if err := r.forget(ctx, n); err != nil {
			return err
		}
		r.state[n] = ""
	}
	if err := r.step(ctx, "", "clean-up: %s and the controller's annotations taken off %s", operand.UpgradeStateLabel, strings.Join(r.nodes, ", ")); err != nil {
		return err
	}
	for _, n := range r.nodes {
		if err := r.giveBack(ctx, n, r.owned[n], operand.DriverUpgrade.Manager); err != nil {
			return err
		}
	}
	return r.step(ctx, "", "clean-up: the deploy labels of %s back under %s alone, as up applied them (%s's claim dropped)",
		strings.Join(r.nodes, ", "), provision.FieldManager, operand.DriverUpgrade.Manager)
}

// applyDriver applies, as gpuops, what gpuops owns of the driver DaemonSet
// with another image and update strategy (none: the default).
func (r *rehearsal) applyDriver(ctx context.Context, image string, strategy appsv1.DaemonSetUpdateStrategyType) (*appsv1.DaemonSet, error) {
	ds, err := r.c.AppsV1().DaemonSets(r.o.Namespace).Get(ctx, r.ds.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ac, err := appsv1ac.ExtractDaemonSet(ds, provision.FieldManager)
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s: %w", ds.Name, err)
	}
	if ac.Spec == nil || ac.Spec.Template == nil || ac.Spec.Template.Spec == nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: %s applied no pod template", r.o.Namespace, ds.Name, provision.FieldManager)
	}
	i := slices.IndexFunc(ac.Spec.Template.Spec.Containers, func(c corev1ac.ContainerApplyConfiguration) bool {
		return c.Name != nil && *c.Name == r.driver
	})
	if i < 0 {
		return nil, fmt.Errorf("DaemonSet %s/%s: %s applied no container %s", r.o.Namespace, ds.Name, provision.FieldManager, r.driver)
	}
	ac.Spec.Template.Spec.Containers[i].WithImage(image)
	ac.Spec.UpdateStrategy = nil
	if strategy != "" {
		ac.Spec.WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().WithType(strategy))
	}
	after, err := r.c.AppsV1().DaemonSets(r.o.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: provision.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("apply DaemonSet %s/%s: %w", r.o.Namespace, ds.Name, err)
	}
	return after, nil
}

// driverPods lists the driver DaemonSet's pods, on one node or all ("").
func (r *rehearsal) driverPods(ctx context.Context, node string) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(r.ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: sel.String()}
	if node != "" {
		opts.FieldSelector = "spec.nodeName=" + node
	}
	list, err := r.c.CoreV1().Pods(r.o.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("list driver pods: %w", err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !ownedBy(&p, r.ds) }), nil
}

// currentDriverPod is the node's driver pod not on its way out.
func (r *rehearsal) currentDriverPod(ctx context.Context, n string) (*corev1.Pod, error) {
	pods, err := r.driverPods(ctx, n)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("node %s has no driver pod", n)
}

func ownedBy(p *corev1.Pod, ds *appsv1.DaemonSet) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.UID == ds.UID
}

// ready: Running and every container Ready, as the controller asks of a
// driver pod in sync (isDriverPodInSync).
func ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if !s.Ready {
			return false
		}
	}
	return true
}

// failing: a container not Ready after more restarts than the controller
// allows (isDriverPodFailing).
func failing(p *corev1.Pod) bool {
	for _, s := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if !s.Ready && s.RestartCount > operand.UpgradeMaxRestarts {
			return true
		}
	}
	return false
}

// selects reports whether a DaemonSet's pods are kept off a node by one of
// the labels: its nodeSelector asks for one of them.
func selects(ds *appsv1.DaemonSet, keys map[string]string) bool {
	for k := range ds.Spec.Template.Spec.NodeSelector {
		if _, ok := keys[k]; ok {
			return true
		}
	}
	return false
}
