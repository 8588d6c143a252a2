package rehearsal

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/rehearsal/configs"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The MPS control daemon's image: the device plugin's
// (k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin/templates/daemonset-mps-control-daemon.yml).
const mpsImage = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"

// sharingScenario: the device plugin's configs in the ConfigMap the
// ClusterPolicy names, a node asking for time-slicing by its config label,
// then MPS with its control daemon.
var sharingScenario = scenario{
	setup: []act{
		func(ctx context.Context, f *offer) (string, error) {
			if err := f.createPolicy(ctx, OfferSpec(SharingConfigMap, "")); err != nil {
				return "", err
			}
			return fmt.Sprintf("ClusterPolicy %s (CRD and object, as the Helm chart installs them) names ConfigMap %s for the device plugin's configs, its status ready for namespace %s",
				PolicyName, SharingConfigMap, f.o.Namespace), nil
		},
		func(ctx context.Context, f *offer) (string, error) {
			cm := SharingConfigs(f.o.Namespace)
			if err := f.createConfigMap(ctx, cm); err != nil {
				return "", err
			}
			return fmt.Sprintf("ConfigMap %s with the device plugin's configs %s (kubectl create configmap)", cm.Name, strings.Join(slices.Sorted(maps.Keys(cm.Data)), ", ")), nil
		},
		func(ctx context.Context, f *offer) (string, error) {
			gpus, err := f.gpus()
			if err != nil {
				return "", err
			}
			if err := f.label(ctx, nfdManager, map[string]string{operand.GPUCountLabel: fmt.Sprint(gpus)}); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s: GFD labels %s=%d through %s: the GPUs a sharing config multiplies", f.node.Name, operand.GPUCountLabel, gpus, nfdManager), nil
		},
	},
	cases: []Case{
		{Name: "a config asked, not applied", Cause: health.SharingNotApplied, Operand: operand.DevicePlugin,
			brk: func(ctx context.Context, f *offer) (string, error) {
				if err := f.label(ctx, userLabel, map[string]string{operand.DevicePluginConfigLabel: "ts"}); err != nil {
					return "", err
				}
				gpus, err := f.gpus()
				return fmt.Sprintf("%s: a user labels %s=ts (time-slicing, %d replicas); the device plugin still advertises %d %s: its config manager has not restarted it",
					f.node.Name, operand.DevicePluginConfigLabel, configs.Replicas, gpus, snapshot.GPUResource), err
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				if err := f.advertise(ctx, map[string]int64{snapshot.GPUResource: gpus * configs.Replicas}); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: the config manager restarted the device plugin with config ts: the kubelet advertises %d %s (%d GPUs x %d replicas)",
					f.node.Name, gpus*configs.Replicas, snapshot.GPUResource, gpus, configs.Replicas), nil
			}},
		{Name: "a config the ConfigMap lacks", Cause: health.SharingConfigUnknown, Operand: operand.DevicePlugin,
			brk: func(ctx context.Context, f *offer) (string, error) {
				if err := f.label(ctx, userLabel, map[string]string{operand.DevicePluginConfigLabel: "ts-a100"}); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: a user labels %s=ts-a100, a config ConfigMap %s lacks", f.node.Name, operand.DevicePluginConfigLabel, SharingConfigMap), nil
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				if err := f.label(ctx, userLabel, map[string]string{operand.DevicePluginConfigLabel: "ts"}); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: the user labels %s=ts again", f.node.Name, operand.DevicePluginConfigLabel), nil
			}},
		{Name: "MPS asked, its control daemon not ready", Cause: health.MPSDaemonNotReady, Operand: operand.DevicePlugin,
			before: []act{
				func(ctx context.Context, f *offer) (string, error) {
					selector := map[string]string{operand.LabelPrefix + operand.DevicePlugin: "true", operand.MPSCapableLabel: "true"}
					if _, err := f.createDaemonSet(ctx, operand.MPSDaemonSet, mpsImage, selector); err != nil {
						return "", err
					}
					return fmt.Sprintf("the operator renders DaemonSet %s, for the nodes labelled %s=true", operand.MPSDaemonSet, operand.MPSCapableLabel), nil
				},
				func(ctx context.Context, f *offer) (string, error) {
					if err := f.label(ctx, userLabel, map[string]string{operand.DevicePluginConfigLabel: "mps"}); err != nil {
						return "", err
					}
					if err := f.label(ctx, nfdManager, map[string]string{operand.MPSCapableLabel: "true"}); err != nil {
						return "", err
					}
					pod, err := f.mpsPodReady(ctx, nil)
					return fmt.Sprintf("%s: a user labels %s=mps (MPS, %d replicas: the count advertised stays); GFD labels %s=true, and the MPS control daemon's pod %s runs Ready there",
						f.node.Name, operand.DevicePluginConfigLabel, configs.Replicas, operand.MPSCapableLabel, pod), err
				},
			},
			brk: func(ctx context.Context, f *offer) (string, error) {
				pod, err := f.mpsPod(ctx)
				if err != nil {
					return "", err
				}
				// hack/kwokctl.yaml's crash-loop stage holds it not Ready.
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"crash-loop",%q:"5"}}}`, podStateAnnotation, restartsAnnotation)
				if _, err := f.c.CoreV1().Pods(f.o.Namespace).Patch(ctx, pod.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
					return "", fmt.Errorf("make pod %s crash-loop: %w", pod.Name, err)
				}
				ds, err := f.c.AppsV1().DaemonSets(f.o.Namespace).Get(ctx, operand.MPSDaemonSet, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				err = f.waitPod(ctx, f.node.Name, ds, "pod "+pod.Name+" to crash-loop (hack/kwokctl.yaml's crash-loop stage)", func(p *corev1.Pod) bool {
					return p.UID == pod.UID && !ready(p) && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount > 0
				})
				return fmt.Sprintf("%s: the MPS control daemon's pod %s crash-loops, not Ready", f.node.Name, pod.Name), err
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				pod, err := f.mpsPod(ctx)
				if err != nil {
					return "", err
				}
				if err := f.c.CoreV1().Pods(f.o.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}); err != nil {
					return "", fmt.Errorf("delete pod %s: %w", pod.Name, err)
				}
				made, err := f.mpsPodReady(ctx, pod)
				return fmt.Sprintf("%s: the cause fixed, an admin deletes %s; the DaemonSet controller makes %s, Ready", f.node.Name, pod.Name, made), err
			}},
	},
}

// gpus is how many GPUs the node advertised before the scenario: the
// count GFD labels and a sharing config multiplies.
func (f *offer) gpus() (int64, error) {
	q, ok := f.node.Status.Allocatable[corev1.ResourceName(snapshot.GPUResource)]
	if !ok || q.Value() == 0 {
		return 0, fmt.Errorf("node %s advertises no %s: nothing to share", f.node.Name, snapshot.GPUResource)
	}
	return q.Value(), nil
}

// mpsPod is the node's MPS control daemon pod.
func (f *offer) mpsPod(ctx context.Context) (*corev1.Pod, error) {
	pods, err := f.c.CoreV1().Pods(f.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + operand.MPSDaemonSet, FieldSelector: "spec.nodeName=" + f.node.Name})
	if err != nil {
		return nil, fmt.Errorf("list the pods of %s: %w", operand.MPSDaemonSet, err)
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp == nil {
			return &pods.Items[i], nil
		}
	}
	return nil, fmt.Errorf("node %s has no pod of DaemonSet %s", f.node.Name, operand.MPSDaemonSet)
}

// mpsPodReady waits for the node's MPS control daemon pod, other than old,
// to be Ready.
func (f *offer) mpsPodReady(ctx context.Context, old *corev1.Pod) (string, error) {
	ds, err := f.c.AppsV1().DaemonSets(f.o.Namespace).Get(ctx, operand.MPSDaemonSet, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return f.podReady(ctx, ds, old)
}
