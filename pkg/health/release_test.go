package health_test

import (
	"testing"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The chain is the operator's release's: v25.10 with GDS and GDRCopy on runs
// nvidia-fs-validation and gdrcopy-validation between the validator's
// driver- and toolkit-validation (NVIDIA/gpu-operator v25.10.0
// assets/state-operator-validation/0500_daemonset.yaml). A validator held in
// gdrcopy-validation (Init:2/6) has not written toolkit-ready, so the GPU
// clients in their toolkit-validation wait on it. Judged by the newest
// release's chain, where toolkit-validation is the second init container,
// Init:2 would read as past it and the device plugin as a cause of its own.
func TestAssessByRelease(t *testing.T) {
	validatorHeld := func() []snapshot.Pod {
		return []snapshot.Pod{
			ready(operand.Driver, "n"), ready(operand.ContainerToolkit, "n"),
			inInit(operand.OperatorValidator, "n", "gdrcopy-validation", 2, 6),
			inInit(operand.DevicePlugin, "n", "toolkit-validation", 0, 2),
			inInit(operand.GPUFeatureDiscovery, "n", "toolkit-validation", 0, 2),
			inInit(operand.DCGM, "n", "toolkit-validation", 0, 1),
			inInit(operand.DCGMExporter, "n", "toolkit-validation", 0, 1),
		}
	}
	policy := &snapshot.ClusterPolicy{Enabled: map[string]bool{"gds": true, "gdrcopy": true}}
	for _, tc := range []struct {
		name, version string
		policy        *snapshot.ClusterPolicy
		pods          []snapshot.Pod
		want          *want
	}{
		{"v25.10, held in gdrcopy-validation: the validator blocks the GPU clients", "v25.10.1", policy, validatorHeld(),
			&want{code: health.InitWaiting, operand: operand.OperatorValidator, message: "gdrcopy-validation (Init:2/6)",
				blocked: []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM}}},
		{"v25.3, held in nvidia-fs-validation", "v25.3.4", policy, func() []snapshot.Pod {
			p := validatorHeld()
			p[2] = inInit(operand.OperatorValidator, "n", "nvidia-fs-validation", 1, 5)
			return p
		}(), &want{code: health.InitWaiting, operand: operand.OperatorValidator, message: "nvidia-fs-validation (Init:1/5)",
			blocked: []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter, operand.DCGM}}},
		{"v25.10, GDS and GDRCopy off: no such containers, past toolkit-validation at Init:2", "v25.10.1", nil,
			append(readyAll("n", operand.OperatorValidator), inInit(operand.OperatorValidator, "n", "cuda-validation", 2, 4)), &want{code: health.InitWaiting, operand: operand.OperatorValidator, message: "cuda-validation (Init:2/4)", blocked: []string{}}},
		{"v24.9, GFD held in its imex-init behind the validator's driver-validation", "v24.9.2", nil, append(
			readyAll("n", operand.OperatorValidator, operand.GPUFeatureDiscovery, operand.Driver),
			crashLoop(operand.Driver, "n", "nvidia-driver-ctr"),
			inInit(operand.OperatorValidator, "n", "driver-validation", 0, 4),
			inInit(operand.GPUFeatureDiscovery, "n", "gpu-feature-discovery-imex-init", 1, 3)),
			&want{code: health.CrashLoop, operand: operand.Driver,
				blocked: []string{operand.GPUFeatureDiscovery, operand.OperatorValidator}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: tc.pods, Policy: tc.policy, OperatorVersion: tc.version}
			checkVerdict(t, health.Assess(s, operand.Real, now, stuckAfter)[0], s.Nodes[0], tc.want)
		})
	}
	// The first case judged as the newest release: the device plugin's wait
	// reads as its own.
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{gpuNode("n", nil)}, Pods: validatorHeld(), Policy: policy}
	if v := health.Assess(s, operand.Real, now, stuckAfter)[0]; v.Cause == nil || len(v.Blocked) != 0 {
		t.Errorf("as the newest release: cause %+v blocking %q, want causes side by side", v.Cause, v.Blocked)
	}
}
