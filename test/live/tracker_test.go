package live_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/summary"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// TestFirstVerdictIsTheOneShotVerdict starts the live tracker in process
// on a settled fleet with a finding of each kind: its first verdict is what
// audit --explain, order-check --all-rules and matrix say from their LIST
// snapshot, each node's group (a GPU model, or none) too; and its informers took their initial lists as streaming
// watches (WatchList: no LIST request at all).
func TestFirstVerdictIsTheOneShotVerdict(t *testing.T) {
	f := newFleet(t)
	healthy := f.gpuNode(t, "ok")
	tainted := f.gpuNode(t, "tainted", testcluster.WithTaints(corev1.Taint{Key: "gpuops.test/broken", Effect: corev1.TaintEffectNoSchedule}))
	noToolkit := f.gpuNode(t, "no-toolkit")
	f.env.LabelNode(t, noToolkit, toolkit.LabelKey(), "false")
	const h100 = "NVIDIA-H100-80GB-HBM3"
	f.env.LabelNode(t, healthy, summary.DefaultGroupBy, h100)
	f.env.WaitForPods(t, f.env.Namespace, func(pods []corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			// A toolkit pod made before the DaemonSet controller saw the
			// opt-out: nine pods counted with it, and the driver's not yet
			// there, were a state the fleet passes through.
			if p.Spec.NodeName == noToolkit && strings.HasPrefix(p.Name, toolkit.DaemonSet+"-") {
				return false
			}
			if testcluster.PodRunningOn(&p, healthy) || testcluster.PodRunningOn(&p, noToolkit) {
				running++
			}
		}
		return running == 9 && len(pods) == 9
	})

	client, rec := f.env.RecordedClient(t)
	selector := testcluster.LabelTestID + "=" + f.env.ID
	opts := pipeline.Options{Namespace: f.env.Namespace, NodeSelector: selector, AllRules: true, Explain: true, StuckAfter: pipeline.DefaultStuckAfter,
		GroupBy: summary.DefaultGroupBy}
	j, err := live.New(client, live.Options{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan verdict.Batch, 1)
	j.Observe(live.Hooks{Judged: func(b verdict.Batch) {
		if b.Initial {
			first <- b
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	b := <-first
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The one-shot pipeline, with the same options, says the same of
	// every node.
	r, err := pipeline.Run(context.Background(), f.env.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Changes) != 3 || len(r.Nodes) != 3 {
		t.Fatalf("first batch: %d nodes, one-shot %d, want 3", len(b.Changes), len(r.Nodes))
	}
	for i, c := range b.Changes {
		if !reflect.DeepEqual(*c.After, r.Nodes[i]) {
			t.Errorf("live verdict of %s:\n%+v\none-shot:\n%+v", c.After.Node, *c.After, r.Nodes[i])
		}
	}
	if got := b.Changes[2].After; got.Node != tainted || len(got.Audit.Missing) != len(operand.Lab) {
		t.Errorf("the tainted node's verdict: %+v", got)
	}
	if got := b.Changes[0].After; got.Node != noToolkit || got.Order.String() != operand.DeviceRule.Finding || got.Group != summary.NoGroup {
		t.Errorf("the node without toolkit: %+v", got)
	}
	if got := b.Changes[1].After; got.Node != healthy || got.Group != h100 {
		t.Errorf("the healthy node: %+v, want group %s", got, h100)
	}

	streamed := map[string]bool{}
	for _, r := range rec.Requests() {
		q := r.URL.Query()
		resource := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		// The ClusterPolicy, NVIDIADrivers and the operator's Deployment
		// (its version) are read, not watched: the operator re-renders its
		// DaemonSets when they change, and a DaemonSet change makes the
		// tracker read them again.
		if q.Get("watch") != "true" && !strings.HasPrefix(r.URL.Path, "/apis/nvidia.com/") && resource != "deployments" {
			t.Errorf("a LIST request: %s %s", r.Method, r.URL)
		}
		if q.Get("sendInitialEvents") == "true" {
			streamed[resource] = true
		}
	}
	if !reflect.DeepEqual(streamed, map[string]bool{"nodes": true, "pods": true, "daemonsets": true}) {
		t.Errorf("initial lists streamed: %v, want nodes, pods and daemonsets", streamed)
	}
}
