package report_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/workload"
)

// A pod that runs, or waits as asked, has no code: its headline's state is
// the verb of the sentence its message ends ("Running on n", not "Running
// running on n").
func TestWhyHeadlineWithoutCode(t *testing.T) {
	now := time.Now()
	nodes := []snapshot.Node{{Name: "n", Ready: true, Devices: map[string]snapshot.DeviceCount{snapshot.GPUResource: {Capacity: 8, Allocatable: 8}}}}
	gpu := map[string]int64{snapshot.GPUResource: 1}
	pods := []snapshot.GPUPod{
		{Namespace: "a", Name: "runs", Node: "n", Phase: corev1.PodRunning, Requests: gpu},
		{Namespace: "a", Name: "starts", Node: "n", Phase: corev1.PodPending, Created: now, Requests: gpu},
	}
	r := &workload.WhyReport{Answers: workload.Why(&snapshot.GPUPods{Pods: pods}, pods, workload.Cluster{Nodes: nodes, Now: now, StuckAfter: time.Minute})}
	var b bytes.Buffer
	if err := (report.Printer{Format: report.Text}).Why(&b, io.Discard, r); err != nil {
		t.Fatal(err)
	}
	if want := "a/runs Running on n\na/starts Waiting bound to n, starting\n"; b.String() != want {
		t.Errorf("why:\n%swant:\n%s", b.String(), want)
	}
}
