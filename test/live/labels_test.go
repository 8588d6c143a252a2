package live_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// TestNewSelectorLabelReadsTheNodesAgain: the live store keeps only the
// node labels the verdicts read (the catalog's and the DaemonSets' selector
// keys), so a label no DaemonSet selects on is not held; when a DaemonSet
// comes to select on it, the tracker reads the nodes again, and the reason
// names the node's value of it as a one-shot read does.
func TestNewSelectorLabelReadsTheNodesAgain(t *testing.T) {
	f := newFleet(t)
	const rack = "gpuops.test/rack"
	node := f.gpuNode(t, "racked")
	f.env.LabelNode(t, node, rack, "a")
	driver := operand.Lab.Driver()
	f.env.WaitForPods(t, f.env.Namespace, func(pods []corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			if testcluster.PodRunningOn(&p, node) {
				running++
			}
		}
		return running == len(operand.Lab)
	})

	client, rec := f.env.RecordedClient(t)
	opts := pipeline.Options{Namespace: f.env.Namespace, NodeSelector: testcluster.LabelTestID + "=" + f.env.ID, Explain: true}
	j, err := live.New(client, live.Options{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	batches := make(chan verdict.Batch, 100)
	j.Observe(live.Hooks{Judged: func(b verdict.Batch) { batches <- b }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if b := <-batches; !b.Initial || len(b.Changes) != 1 || len(b.Changes[0].After.Audit.Missing) != 0 {
		t.Fatalf("first batch: %+v", b)
	}
	nodeWatches := func() int {
		n := 0
		for _, r := range rec.Requests() {
			if strings.HasSuffix(r.URL.Path, "/nodes") && r.URL.Query().Get("sendInitialEvents") == "true" {
				n++
			}
		}
		return n
	}
	if n := nodeWatches(); n != 1 {
		t.Fatalf("%d initial node lists before the DaemonSet change, want 1", n)
	}

	patch := `{"spec":{"template":{"spec":{"nodeSelector":{"` + rack + `":"b"}}}}}`
	if _, err := f.env.Client.AppsV1().DaemonSets(f.env.Namespace).Patch(context.Background(), driver.DaemonSet,
		types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "DaemonSet " + driver.DaemonSet + " selects " + rack + "=b; the node has " + rack + "=a"
	deadline := time.After(patience)
	for {
		select {
		case b := <-batches:
			for _, c := range b.Changes {
				for _, m := range c.After.Why().Missing {
					for _, r := range m.Reasons {
						if m.Operand == driver.Name && r.Message == want {
							if n := nodeWatches(); n != 2 {
								t.Errorf("%d initial node lists, want 2: the first and one after the DaemonSet selected on a new label", n)
							}
							return
						}
					}
				}
			}
		case <-deadline:
			t.Fatalf("no batch says %q", want)
		}
	}
}
