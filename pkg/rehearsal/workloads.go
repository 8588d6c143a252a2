package rehearsal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

// Workloads is the scenario of GPU pods that do not run: a user's pods,
// made in a namespace of their own, each meeting one cause gpuops why
// names, then healed as a person would.
const Workloads = "workloads"

// WorkloadsNamespace is where the workloads scenario makes its pods; it
// refuses a cluster that has it, and deletes it at the end.
const WorkloadsNamespace = "gpuops-workloads"

// WorkloadsStuckAfter is the --stuck-after the workloads scenario judges
// with: a pod the scheduler has refused is a finding at once, not Waiting.
const WorkloadsStuckAfter = time.Nanosecond

// The workloads scenario's writers besides kubectl label: kubectl 1.37's
// cordon and taint write as kubectl (operand.KubectlManager), a person as
// far as the ledger can tell.
const (
	userKubectl = operand.KubectlManager
	cudaImage   = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"
	// sharedResource is what time-slicing with renameByDefault advertises:
	// a pod asking it where no node does is the resource-not-offered case.
	sharedResource = snapshot.GPUResource + snapshot.SharedSuffix
)

// dedicated is the taint of the untolerated-taint case: a person keeps the
// node for the pods that tolerate it.
var dedicated = corev1.Taint{Key: "dedicated", Value: "training", Effect: corev1.TaintEffectNoSchedule}

// workloads is the scenario's own state on an offer walk.
type workloads struct {
	others  []string // the other READY GPU nodes, held full
	pods    []string // made and not yet deleted, in order
	created bool     // the namespace
	// the GPUs each holder (hold-i on others[i]) asks now, and all of its node's
	held, full []int64
}

// workloadsScenario: the other READY GPU nodes held full by a pod each, so
// that the first one, f.node, is where a pod could run but for the case's
// cause; then each cause, and the heal that lets the pod run there.
var workloadsScenario = scenario{
	stuckAfter: WorkloadsStuckAfter,
	setup: []act{
		func(ctx context.Context, f *offer) (string, error) {
			w := f.work
			gpus, err := f.gpus()
			if err != nil {
				return "", err
			}
			for _, k := range []string{operand.ContainerToolkit, operand.DevicePlugin} {
				if f.node.Labels[operand.LabelPrefix+k] != "true" {
					return "", fmt.Errorf("node %s does not ask for %s: the workloads rehearsal switches its toolkit off under a running device plugin", f.node.Name, k)
				}
			}
			if _, err := f.c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: WorkloadsNamespace}},
				metav1.CreateOptions{FieldManager: userCreate}); err != nil {
				return "", fmt.Errorf("create namespace %s: %w", WorkloadsNamespace, err)
			}
			w.created = true
			what := fmt.Sprintf("namespace %s (kubectl create namespace); %s has %d free %s", WorkloadsNamespace, f.node.Name, gpus, snapshot.GPUResource)
			for i, n := range w.others {
				node, err := f.c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				q := node.Status.Allocatable[corev1.ResourceName(snapshot.GPUResource)]
				w.full, w.held = append(w.full, q.Value()), append(w.held, 0)
				if err := f.hold(ctx, i, q.Value()); err != nil {
					return "", err
				}
				what += fmt.Sprintf("; pod %s asks all %d GPUs of %s and runs there", holder(i), q.Value(), n)
			}
			return what, nil
		},
	},
	cases: []Case{
		{Name: "every GPU taken", Cause: workload.AllAllocated,
			before: []act{func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				if err := f.run(ctx, gpuPod("train-1", snapshot.GPUResource, gpus, nil), f.node.Name); err != nil {
					return "", err
				}
				return fmt.Sprintf("pod train-1 asks %d %s: the scheduler places it on %s", gpus, snapshot.GPUResource, f.node.Name), nil
			}},
			brk: func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				return fmt.Sprintf("pod train-2 asks %d %s: no node has them free", gpus, snapshot.GPUResource),
					f.refused(ctx, gpuPod("train-2", snapshot.GPUResource, gpus, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				if err := f.deletePods(ctx, "train-1"); err != nil {
					return "", err
				}
				return fmt.Sprintf("train-1 ends and is deleted: the scheduler places train-2 on %s", f.node.Name), f.placed(ctx, "train-2")
			}},
		{Name: "more GPUs than a node has", Cause: workload.ExceedsNode,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				return fmt.Sprintf("pod big asks %d %s, more than any node has", 2*gpus, snapshot.GPUResource),
					f.refused(ctx, gpuPod("big", snapshot.GPUResource, 2*gpus, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				return fmt.Sprintf("the user deletes big and asks %d in pod big-fit: it runs on %s", gpus, f.node.Name),
					f.replace(ctx, "big", gpuPod("big-fit", snapshot.GPUResource, gpus, nil))
			}},
		{Name: "a resource no node offers", Cause: workload.ResourceNotOffered,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				return fmt.Sprintf("pod shared asks 1 %s (a time-slicing config with renameByDefault would offer it; none does)", sharedResource),
					f.refused(ctx, gpuPod("shared", sharedResource, 1, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				return fmt.Sprintf("the user deletes shared and asks 1 %s in pod whole: it runs on %s", snapshot.GPUResource, f.node.Name),
					f.replace(ctx, "shared", gpuPod("whole", snapshot.GPUResource, 1, nil))
			}},
		{Name: "unhealthy GPUs", Cause: workload.GPUsUnhealthy,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				if err := f.allocatable(ctx, gpus-unhealthy); err != nil {
					return "", err
				}
				return fmt.Sprintf("the device plugin marks %d GPUs of %s unhealthy: the kubelet's allocatable %d of capacity %d; pod train asks %d %s",
					unhealthy, f.node.Name, gpus-unhealthy, gpus, gpus, snapshot.GPUResource), f.refused(ctx, gpuPod("train", snapshot.GPUResource, gpus, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				if err := f.allocatable(ctx, gpus); err != nil {
					return "", err
				}
				return fmt.Sprintf("the GPUs healthy again, the kubelet's allocatable %d: train runs on %s", gpus, f.node.Name), f.placed(ctx, "train")
			}},
		{Name: "free GPUs spread over nodes", Cause: workload.Fragmented,
			before: []act{deleteAll, func(ctx context.Context, f *offer) (string, error) {
				gpus, _ := f.gpus()
				w := f.work
				if len(w.others) == 0 || gpus <= spread || w.full[0] <= spread {
					return "", fmt.Errorf("the fragmented case needs a second READY GPU node, and more than %d GPUs on each", spread)
				}
				if err := f.run(ctx, gpuPod("part", snapshot.GPUResource, gpus-spread, map[string]string{corev1.LabelHostname: f.node.Name}), f.node.Name); err != nil {
					return "", err
				}
				if err := f.hold(ctx, 0, w.full[0]-spread); err != nil {
					return "", err
				}
				return fmt.Sprintf("pod part asks %d GPUs of %s, and %s is made again asking %d of %s: %d free on each", gpus-spread, f.node.Name,
					holder(0), w.full[0]-spread, w.others[0], spread), nil
			}},
			brk: func(ctx context.Context, f *offer) (string, error) {
				return fmt.Sprintf("pod train asks %d %s: enough are free, on no one node", spread+1, snapshot.GPUResource),
					f.refused(ctx, gpuPod("train", snapshot.GPUResource, spread+1, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				if err := f.deletePods(ctx, "part"); err != nil {
					return "", err
				}
				return fmt.Sprintf("part ends and is deleted: the scheduler places train on %s", f.node.Name), f.placed(ctx, "train")
			}},
		{Name: "the free node cordoned", Cause: workload.Cordoned,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				if err := f.patchNodeAs(ctx, f.node.Name, userKubectl, map[string]any{"spec": map[string]any{"unschedulable": true}}); err != nil {
					return "", err
				}
				return fmt.Sprintf("a person cordons %s (kubectl cordon); pod train asks 1 %s", f.node.Name, snapshot.GPUResource),
					f.refused(ctx, gpuPod("train", snapshot.GPUResource, 1, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				if err := f.patchNodeAs(ctx, f.node.Name, userKubectl, map[string]any{"spec": map[string]any{"unschedulable": nil}}); err != nil {
					return "", err
				}
				return fmt.Sprintf("the person uncordons %s: train runs there", f.node.Name), f.placed(ctx, "train")
			}},
		{Name: "a taint the pod does not tolerate", Cause: workload.UntoleratedTaint,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				if err := f.taint(ctx, true); err != nil {
					return "", err
				}
				return fmt.Sprintf("a person taints %s %s (kubectl taint); pod train asks 1 %s and does not tolerate it", f.node.Name, dedicated.ToString(), snapshot.GPUResource),
					f.refused(ctx, gpuPod("train", snapshot.GPUResource, 1, nil))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				if err := f.taint(ctx, false); err != nil {
					return "", err
				}
				return fmt.Sprintf("the person takes the taint off %s: train runs there", f.node.Name), f.placed(ctx, "train")
			}},
		{Name: "a nodeSelector no free node matches", Cause: workload.SelectorMismatch,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				sel := map[string]string{operand.GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}
				return fmt.Sprintf("pod train asks 1 %s with nodeSelector %s=%s, a label no node has", snapshot.GPUResource, operand.GPUProductLabel, sel[operand.GPUProductLabel]),
					f.refused(ctx, gpuPod("train", snapshot.GPUResource, 1, sel))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				sel := map[string]string{operand.GPUPresent: "true"}
				return fmt.Sprintf("the user deletes train and makes train-gpu with nodeSelector %s=true: it runs on %s", operand.GPUPresent, f.node.Name),
					f.replace(ctx, "train", gpuPod("train-gpu", snapshot.GPUResource, 1, sel))
			}},
		{Name: "the toolkit switched off under a running device plugin", Cause: workload.OnUnusableNode,
			before: []act{deleteAll},
			brk: func(ctx context.Context, f *offer) (string, error) {
				key := operand.LabelPrefix + operand.ContainerToolkit
				f.wrote[key] = true
				if err := f.pause(ctx, userLabel, f.node.Name, map[string]string{key: "false"}, false); err != nil {
					return "", err
				}
				gpus, _ := f.gpus()
				return fmt.Sprintf("a stray kubectl label %s=false on %s: its toolkit pod is gone, its device plugin runs on and the node still advertises %d %s; pod infer asks them, the scheduler places it there and it runs: it cannot open the device",
					key, f.node.Name, gpus, snapshot.GPUResource), f.run(ctx, gpuPod("infer", snapshot.GPUResource, gpus, nil), f.node.Name)
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				key := operand.LabelPrefix + operand.ContainerToolkit
				if err := f.pause(ctx, userLabel, f.node.Name, map[string]string{key: "true"}, true); err != nil {
					return "", err
				}
				gpus, _ := f.gpus()
				return fmt.Sprintf("the user labels %s=true again: the toolkit pod runs; infer, which never got a usable device, is made again as infer-2 and runs on %s", key, f.node.Name),
					f.replace(ctx, "infer", gpuPod("infer-2", snapshot.GPUResource, gpus, nil))
			}},
	},
}

// gpuPod is a user's bare pod of WorkloadsNamespace, one CUDA container
// with a limit of n of the resource (the device plugin's resources are
// asked by limits), on the nodes nodeSelector picks.
func gpuPod(name, resourceName string, n int64, nodeSelector map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: WorkloadsNamespace},
		Spec: corev1.PodSpec{NodeSelector: nodeSelector, Containers: []corev1.Container{{Name: "cuda", Image: cudaImage,
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceName(resourceName): *resource.NewQuantity(n, resource.DecimalSI)}}}}},
	}
}

// The unhealthy case's count of GPUs marked unhealthy, and the fragmented
// case's free GPUs on each of two nodes (the pod asks one more).
const (
	unhealthy = 2
	spread    = 3
)

// deleteAll: the case before is over, its pods deleted, and each holder
// asking all its node's GPUs again.
func deleteAll(ctx context.Context, f *offer) (string, error) {
	w := f.work
	var gone []string
	for _, p := range w.pods {
		if !strings.HasPrefix(p, holder(-1)) {
			gone = append(gone, p)
		}
	}
	if err := f.deletePods(ctx, gone...); err != nil {
		return "", err
	}
	what := fmt.Sprintf("the user deletes %s: %s is free again", strings.Join(gone, ", "), f.node.Name)
	for i, n := range w.held {
		if n != w.full[i] {
			if err := f.hold(ctx, i, w.full[i]); err != nil {
				return "", err
			}
			what += fmt.Sprintf("; %s is made again asking all %d GPUs of %s", holder(i), w.full[i], w.others[i])
		}
	}
	return what, nil
}

// holder is the name of the pod that holds others[i] (i < 0: their prefix).
func holder(i int) string {
	if i < 0 {
		return "hold-"
	}
	return fmt.Sprintf("hold-%d", i)
}

// hold makes the holder of others[i] asking n of its GPUs, the one before
// deleted.
func (f *offer) hold(ctx context.Context, i int, n int64) error {
	w := f.work
	if err := f.deletePods(ctx, holder(i)); err != nil {
		return err
	}
	if err := f.run(ctx, gpuPod(holder(i), snapshot.GPUResource, n, map[string]string{corev1.LabelHostname: w.others[i]}), w.others[i]); err != nil {
		return err
	}
	w.held[i] = n
	return nil
}

// allocatable writes the walk's node's allocatable GPUs as the kubelet
// does when the device plugin reports some unhealthy (its capacity
// stays); the clean-up puts both back.
func (f *offer) allocatable(ctx context.Context, n int64) error {
	f.advertised[snapshot.GPUResource] = true
	q := resource.NewQuantity(n, resource.DecimalSI).String()
	return f.patchNodeAs(ctx, f.node.Name, kubeletManager, map[string]any{"status": map[string]any{"allocatable": map[string]any{snapshot.GPUResource: q}}}, "status")
}

// create makes the pod as a user does and names it to the step.
func (f *offer) create(ctx context.Context, p *corev1.Pod) error {
	if _, err := f.c.CoreV1().Pods(WorkloadsNamespace).Create(ctx, p, metav1.CreateOptions{FieldManager: userCreate}); err != nil {
		return fmt.Errorf("create pod %s/%s: %w", WorkloadsNamespace, p.Name, err)
	}
	f.work.pods = append(f.work.pods, p.Name)
	f.shown = append(f.shown, WorkloadsNamespace+"/"+p.Name)
	return nil
}

// run makes the pod and waits until it runs, Ready, on node.
func (f *offer) run(ctx context.Context, p *corev1.Pod, node string) error {
	if err := f.create(ctx, p); err != nil {
		return err
	}
	return f.waitWorkload(ctx, p.Name, "to run on "+node, func(p *corev1.Pod) bool { return p.Spec.NodeName == node && ready(p) })
}

// placed waits until the pod made before runs, Ready, on the walk's node.
func (f *offer) placed(ctx context.Context, name string) error {
	f.shown = append(f.shown, WorkloadsNamespace+"/"+name)
	return f.waitWorkload(ctx, name, "to run on "+f.node.Name, func(p *corev1.Pod) bool { return p.Spec.NodeName == f.node.Name && ready(p) })
}

// refused makes the pod and waits until the scheduler has said why it
// places it nowhere (PodScheduled False, Unschedulable, with its message).
func (f *offer) refused(ctx context.Context, p *corev1.Pod) error {
	if err := f.create(ctx, p); err != nil {
		return err
	}
	return f.waitWorkload(ctx, p.Name, "the scheduler's refusal", func(p *corev1.Pod) bool {
		return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message != ""
		})
	})
}

// replace deletes the pod and makes its successor, which runs on the
// walk's node.
func (f *offer) replace(ctx context.Context, old string, p *corev1.Pod) error {
	if err := f.deletePods(ctx, old); err != nil {
		return err
	}
	return f.run(ctx, p, f.node.Name)
}

// deletePods deletes the scenario's pods and waits until they are gone.
func (f *offer) deletePods(ctx context.Context, names ...string) error {
	for _, name := range names {
		if err := f.c.CoreV1().Pods(WorkloadsNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", WorkloadsNamespace, name, err)
		}
		if err := f.waitWorkload(ctx, name, "to be gone", nil); err != nil {
			return err
		}
		f.work.pods = slices.DeleteFunc(f.work.pods, func(p string) bool { return p == name })
	}
	return nil
}

// waitWorkload waits until the scenario's pod passes check; a nil check
// waits until it is gone.
func (f *offer) waitWorkload(ctx context.Context, name, what string, check func(*corev1.Pod) bool) error {
	lw := cache.NewListWatchFromClient(f.c.CoreV1().RESTClient(), "pods", WorkloadsNamespace, fields.OneTermEqualSelector("metadata.name", name))
	return f.wait(ctx, "pod "+WorkloadsNamespace+"/"+name+" "+what, lw, &corev1.Pod{}, func(objs []any) bool {
		if check == nil {
			return len(objs) == 0
		}
		return len(objs) == 1 && check(objs[0].(*corev1.Pod))
	})
}

// taint puts the dedicated taint on the walk's node, or takes it off, as
// kubectl taint does: the node's taints read and written back whole.
func (f *offer) taint(ctx context.Context, on bool) error {
	node, err := f.c.CoreV1().Nodes().Get(ctx, f.node.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.MatchTaint(&dedicated) })
	if on {
		taints = append(taints, dedicated)
	}
	return f.patchNodeAs(ctx, f.node.Name, userKubectl, map[string]any{"spec": map[string]any{"taints": taints}})
}

// cleanUpWorkloads deletes what the scenario made (its pods, the
// namespace) and puts the node's cordon and taints back as they were; the
// offer's clean-up does the labels and field managers.
func (f *offer) cleanUpWorkloads(ctx context.Context) ([]string, error) {
	w := f.work
	if !w.created {
		return nil, nil
	}
	if err := f.deletePods(ctx, slices.Clone(w.pods)...); err != nil {
		return nil, err
	}
	node, err := f.c.CoreV1().Nodes().Get(ctx, f.node.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if node.Spec.Unschedulable != f.node.Spec.Unschedulable || !slices.EqualFunc(node.Spec.Taints, f.node.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
		if err := f.patchNodeAs(ctx, f.node.Name, userKubectl, map[string]any{"spec": map[string]any{"unschedulable": f.node.Spec.Unschedulable, "taints": f.node.Spec.Taints}}); err != nil {
			return nil, err
		}
	}
	if err := f.dropNewManagers(ctx); err != nil { // the cordon's and taint's writer
		return nil, err
	}
	if err := f.c.CoreV1().Namespaces().Delete(ctx, WorkloadsNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("delete namespace %s: %w", WorkloadsNamespace, err)
	}
	lw := cache.NewListWatchFromClient(f.c.CoreV1().RESTClient(), "namespaces", "", fields.OneTermEqualSelector("metadata.name", WorkloadsNamespace))
	if err := f.wait(ctx, "namespace "+WorkloadsNamespace+" to be gone", lw, &corev1.Namespace{}, func(objs []any) bool { return len(objs) == 0 }); err != nil {
		return nil, err
	}
	w.created = false
	return []string{"namespace " + WorkloadsNamespace + " and its pods"}, nil
}
