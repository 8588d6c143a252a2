package workload_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

// BenchmarkJudge5000 is one judgement of the workload side, as serve
// --workloads makes after each change and capacity and pods once: 5,000
// nodes of 8 GPUs, every one usable, and 10,000 GPU pods running on them.
//
//	go test ./pkg/workload -run '^$' -bench Judge5000
func BenchmarkJudge5000(b *testing.B) {
	s := fleettest.Snapshot(5000)
	healthOf := map[string]*health.Node{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.Devices = map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 8, Allocatable: 8}}
		healthOf[n.Name] = &health.Node{Judged: true, Usable: true}
	}
	f := &snapshot.GPUPods{}
	for i := range 10000 {
		f.Pods = append(f.Pods, snapshot.GPUPod{Namespace: fmt.Sprintf("team-%d", i%5), Name: fmt.Sprintf("train-%05d", i),
			Node: s.Nodes[i%len(s.Nodes)].Name, Phase: corev1.PodRunning, Requests: map[string]int64{snapshot.GPUResource: 1}})
	}
	in := &workload.Inputs{Snapshot: s, Health: healthOf, Pods: f}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		in.Capacity("")
		in.PodsOf(nil, now, 5*time.Minute)
	}
}
