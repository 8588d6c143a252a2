package rehearsal

import (
	"context"
	"fmt"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
)

// The DRA kubelet plugin's image (kubernetes-sigs/dra-driver-nvidia-gpu
// v25.12.0).
const draPluginImage = "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0"

// draScenario: the DRA kubelet plugin's DaemonSet on a node the operator's
// labeller labels for it, and the ResourceSlices it publishes, one pool per
// node, then each way the pool goes wrong.
var draScenario = scenario{
	setup: []act{
		func(ctx context.Context, f *offer) (string, error) {
			gpus, err := f.gpus()
			if err != nil {
				return "", err
			}
			deploy := operand.LabelPrefix + operand.DRADriver
			if err := f.label(ctx, operand.UpgradeManager, map[string]string{deploy: "true"}); err != nil {
				return "", err
			}
			o, _ := operand.Lookup(operand.Real, operand.DRADriver) // always in the catalog
			ds, err := f.createDaemonSet(ctx, o.DaemonSet, draPluginImage, map[string]string{deploy: "true"})
			if err != nil {
				return "", err
			}
			pod, err := f.podReady(ctx, ds, nil)
			if err != nil {
				return "", err
			}
			if err := f.publish(ctx, []Slice{{Generation: 1, Count: 1, Devices: Devices("gpu", "gpu", int(gpus))}}); err != nil {
				return "", err
			}
			f.generation = 1
			return fmt.Sprintf("%s: the operator labels %s=true and renders DaemonSet %s, whose pod %s runs Ready there and publishes ResourceSlice %s: pool %s, generation 1, %d devices of type gpu",
				f.node.Name, deploy, ds.Name, pod, ResourceSlice(f.node, 0, Slice{}).Name, f.node.Name, gpus), nil
		},
	},
	cases: []Case{
		{Name: "no ResourceSlice published", Cause: health.DevicesNotPublished, Operand: operand.DRADriver,
			brk: func(ctx context.Context, f *offer) (string, error) {
				return fmt.Sprintf("%s: the kubelet plugin's ResourceSlice is deleted and not published again, its pod still Ready", f.node.Name), f.publish(ctx, nil)
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				f.generation++
				return fmt.Sprintf("%s: the kubelet plugin publishes its pool again: generation %d, %d devices", f.node.Name, f.generation, gpus),
					f.publish(ctx, []Slice{{Generation: f.generation, Count: 1, Devices: Devices("gpu", "gpu", int(gpus))}})
			}},
		{Name: "a pool missing slices", Cause: health.PoolIncomplete, Operand: operand.DRADriver,
			brk: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				f.generation++
				return fmt.Sprintf("%s: the kubelet plugin republishes its pool in 2 ResourceSlices, generation %d; only the first, %d devices, is written yet", f.node.Name, f.generation, gpus/2),
					f.publish(ctx, f.halves(gpus, false))
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: the second ResourceSlice of generation %d, the other %d devices, is written", f.node.Name, f.generation, gpus-gpus/2),
					f.publish(ctx, f.halves(gpus, true))
			}},
		{Name: "devices tainted against new claims", Cause: health.DevicesTainted, Operand: operand.DRADriver,
			brk: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				pool := f.halves(gpus, true)
				pool[0].Devices = Devices("gpu", "gpu", int(gpus/2), FatalXID, FatalXID)
				return fmt.Sprintf("%s: the kubelet plugin's health monitor taints gpu-0 and gpu-1 %s=%s:%s (a fatal XID)", f.node.Name, FatalXID.Key, FatalXID.Value, FatalXID.Effect),
					f.publish(ctx, pool)
			},
			heal: func(ctx context.Context, f *offer) (string, error) {
				gpus, err := f.gpus()
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s: the GPUs reset, the health monitor takes the taints off", f.node.Name), f.publish(ctx, f.halves(gpus, true))
			}},
	},
}

// halves is the node's pool at the current generation in 2 slices, half
// the GPUs each: both, or only the first.
func (f *offer) halves(gpus int64, both bool) []Slice {
	pool := []Slice{{Generation: f.generation, Count: 2, Devices: Devices("gpu", "gpu", int(gpus/2))}}
	if both {
		pool = append(pool, Slice{Generation: f.generation, Count: 2, Devices: Devices("gpu-b", "gpu", int(gpus-gpus/2))})
	}
	return pool
}
