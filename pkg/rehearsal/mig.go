package rehearsal

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The MIG manager's image (NVIDIA/gpu-operator v26.7.0's default).
const migManagerImage = "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0"

// GFD's label of a node whose GPUs can be partitioned, on which the
// operator's labeller asks for the MIG manager.
const migCapableLabel = "nvidia.com/mig.capable"

// The layout the MIG rehearsal applies: every GPU in 7 MIG devices of
// profile 1g.10gb (configs.MIG).
const (
	migLayout   = "all-1g.10gb"
	migProfile  = "1g.10gb"
	migPerGPU   = 7
	migStrategy = "mixed"
)

// migScenario: the MIG manager's layouts in the ConfigMap the ClusterPolicy
// names, its DaemonSet, a node whose first MIG change aborts, then is
// applied, then goes wrong in each other way.
var migScenario = scenario{
	stuckAfter: MIGStuckAfter,
	setup: []act{
		func(ctx context.Context, f *offer) (string, error) {
			if err := f.createPolicy(ctx, OfferSpec("", MIGConfigMap)); err != nil {
				return "", err
			}
			return fmt.Sprintf("ClusterPolicy %s (CRD and object, as the Helm chart installs them) names ConfigMap %s for the MIG manager's layouts, MIG strategy %s, its status ready for namespace %s",
				PolicyName, MIGConfigMap, migStrategy, f.o.Namespace), nil
		},
		func(ctx context.Context, f *offer) (string, error) {
			cm := MIGConfigs(f.o.Namespace)
			if err := f.createConfigMap(ctx, cm); err != nil {
				return "", err
			}
			return fmt.Sprintf("ConfigMap %s with the MIG layouts all-disabled, all-1g.10gb, all-balanced under key %s (kubectl create configmap)", cm.Name, operand.MIGConfigKey), nil
		},
		func(ctx context.Context, f *offer) (string, error) {
			gpus, err := f.gpus()
			if err != nil {
				return "", err
			}
			if err := f.label(ctx, nfdManager, map[string]string{operand.GPUCountLabel: fmt.Sprint(gpus), migCapableLabel: "true", operand.MIGStrategyLabel: migStrategy}); err != nil {
				return "", err
			}
			deploy := operand.LabelPrefix + operand.MIGManager
			if err := f.label(ctx, operand.UpgradeManager, map[string]string{deploy: "true"}); err != nil {
				return "", err
			}
			ds, err := f.createDaemonSet(ctx, migManagerDaemonSet(), migManagerImage, map[string]string{deploy: "true"})
			if err != nil {
				return "", err
			}
			pod, err := f.podReady(ctx, ds, nil)
			return fmt.Sprintf("%s: GFD labels %s=%d, %s=true, %s=%s through %s; the operator labels %s=true and renders DaemonSet %s, whose pod %s runs Ready there",
				f.node.Name, operand.GPUCountLabel, gpus, migCapableLabel, operand.MIGStrategyLabel, migStrategy, nfdManager, deploy, ds.Name, pod), err
		},
	},
	cases: []Case{
		{Name: "a MIG change aborted, left pending", Cause: health.MIGStuck, Operand: operand.MIGManager,
			brk: func(ctx context.Context, f *offer) (string, error) {
				if err := f.label(ctx, userLabel, map[string]string{operand.MIGConfigLabel: migLayout}); err != nil {
					return "", err
				}
				if err := f.migState(ctx, operand.MIGPending); err != nil {
					return "", err
				}
				paused := migPauses(f.node.Labels)
				if err := f.pause(ctx, operand.MIGChange.Manager, f.node.Name, paused, false); err != nil {
					return "", err
				}
				// Nothing more happens: the change has lasted longer than --stuck-after.
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(f.sc.stuckAfter + time.Second):
				}
				return fmt.Sprintf("%s: a user labels %s=%s; the MIG manager sets %s=%s, pauses %s (%s), their pods are gone; then it stops: nothing more for longer than --stuck-after %s",
					f.node.Name, operand.MIGConfigLabel, migLayout, operand.MIGChange.StateLabel, operand.MIGPending, labelNames(paused), operand.MIGChange.Value, f.sc.stuckAfter), nil
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				devices := gpus * migPerGPU
				if err := f.advertise(ctx, map[string]int64{snapshot.GPUResource: 0, snapshot.MIGResource(migProfile): devices}); err != nil {
					return "", err
				}
				if err := f.label(ctx, nfdManager, map[string]string{snapshot.MIGResource(migProfile) + operand.MIGCountSuffix: fmt.Sprint(devices)}); err != nil {
					return "", err
				}
				paused := migPauses(f.node.Labels)
				if err := f.pause(ctx, operand.MIGChange.Manager, f.node.Name, resumed(paused), true); err != nil {
					return "", err
				}
				if err := f.migState(ctx, operand.MIGSuccess); err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: the MIG manager, restarted, applies %s: the kubelet advertises %d %s and 0 %s, GFD labels %s%s=%d; it resumes %s, their pods run again, and sets %s=%s",
					f.node.Name, migLayout, devices, snapshot.MIGResource(migProfile), snapshot.GPUResource, snapshot.MIGResource(migProfile), operand.MIGCountSuffix, devices,
					labelNames(paused), operand.MIGChange.StateLabel, operand.MIGSuccess), nil
			}},
		{Name: "MIG devices advertised that are not the layout's", Cause: health.MIGLayoutMismatch, Operand: operand.MIGManager,
			brk: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				half := gpus / 2 * migPerGPU
				return fmt.Sprintf("%s: the device plugin advertises %d %s, the MIG devices of %d of the %d GPUs", f.node.Name, half, snapshot.MIGResource(migProfile), gpus/2, gpus),
					f.advertise(ctx, map[string]int64{snapshot.MIGResource(migProfile): half})
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: the device plugin advertises all %d %s again", f.node.Name, gpus*migPerGPU, snapshot.MIGResource(migProfile)),
					f.advertise(ctx, map[string]int64{snapshot.MIGResource(migProfile): gpus * migPerGPU})
			}},
		{Name: "the MIG manager failed to apply a layout", Cause: health.MIGFailed, Operand: operand.MIGManager,
			brk:  relayout("all-balanced", operand.MIGFailed, "which the MIG manager fails to apply"),
			heal: relayout(migLayout, operand.MIGSuccess, "again; the MIG manager finds it applied"),
		},
		{Name: "a layout the ConfigMap lacks", Cause: health.MIGConfigUnknown, Operand: operand.MIGManager,
			brk:  relayout("all-3g.40gb", operand.MIGFailed, "a layout ConfigMap "+MIGConfigMap+" lacks; the MIG manager fails"),
			heal: relayout(migLayout, operand.MIGSuccess, "again; the MIG manager finds it applied"),
		},
	},
}

// relayout: a user labels the node's MIG config, and the MIG manager ends
// in state.
func relayout(layout, state, words string) act {
	return func(ctx context.Context, f *offer) (string, error) {
		if err := f.label(ctx, userLabel, map[string]string{operand.MIGConfigLabel: layout}); err != nil {
			return "", err
		}
		if err := f.migState(ctx, state); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s: a user labels %s=%s, %s: %s=%s", f.node.Name, operand.MIGConfigLabel, layout, words, operand.MIGChange.StateLabel, state), nil
	}
}

// migState writes the MIG manager's state label, as it does
// (mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go).
func (f *offer) migState(ctx context.Context, state string) error {
	return f.label(ctx, operand.MIGChange.Manager, map[string]string{operand.MIGChange.StateLabel: state})
}

// migPauses are the deploy labels the MIG manager pauses on a node with
// these labels: those of its operands that are "true".
func migPauses(labels map[string]string) map[string]string {
	out := map[string]string{}
	for _, o := range operand.MIGChange.Operands {
		if key := operand.LabelPrefix + o; labels[key] == "true" {
			out[key] = operand.MIGChange.Value
		}
	}
	return out
}

// resumed are the labels it writes back: "true" again.
func resumed(paused map[string]string) map[string]string {
	out := map[string]string{}
	for k := range paused {
		out[k] = "true"
	}
	return out
}

// labelNames are the operands of deploy labels, in order, for a step's words.
func labelNames(m map[string]string) string { return strings.Join(keys(m), ", ") }

// migManagerDaemonSet is the MIG manager's DaemonSet's name.
func migManagerDaemonSet() string {
	o, _ := operand.Lookup(operand.Real, operand.MIGManager) // always in the catalog
	return o.DaemonSet
}
