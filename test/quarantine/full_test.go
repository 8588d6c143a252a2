package quarantine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// A full node is never quarantined: with the validator's workload check on,
// its plugin-validation pod refused a GPU (UnexpectedAdmissionError,
// NVIDIA/gpu-operator#233, #481) on a node whose GPUs the users' pods hold
// all. The same refusal, long past the validator's retry, on a node with a
// GPU free is the node's fault, and is quarantined meanwhile: the quarantine acts, on the other node alone,
// with no rate or limit in the way.
func TestNeverAFullNode(t *testing.T) {
	env := testcluster.New(t)
	env.Timeout = patience
	ctx := context.Background()
	stack := []string{operand.Driver, operand.ContainerToolkit, operand.OperatorValidator, operand.DevicePlugin}
	labels := map[string]string{operand.GPUPresent: "true"}
	for _, name := range stack {
		o, err := operand.Lookup(operand.Real, name)
		if err != nil {
			t.Fatal(err)
		}
		labels[o.LabelKey()] = "true"
		ds := testcluster.DaemonSet(env.Namespace, o.DaemonSet, map[string]string{o.LabelKey(): "true"}, "16Mi")
		for _, i := range operand.Newest().InitsOf(name) {
			ds.Spec.Template.Spec.InitContainers = append(ds.Spec.Template.Spec.InitContainers, corev1.Container{Name: i.Container, Image: "registry.example/fake:1"})
		}
		if name == operand.OperatorValidator {
			// It waits for its workload pod, as the validator does for
			// five minutes at a time (cmd/nvidia-validator, waitForPod).
			testcluster.InitWaiting(&ds.Spec.Template, "plugin-validation")
		}
		if _, err := env.Client.AppsV1().DaemonSets(env.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gpus := testcluster.WithCapacity(corev1.ResourceList{snapshot.GPUResource: resource.MustParse("8")})
	full, free1 := env.NodeName("full"), env.NodeName("gpu-free")
	users := env.OtherNamespace(t, "users")
	for node, held := range map[string][]int64{full: {4, 4}, free1: {4, 3}} {
		env.AddNode(t, node, labels, gpus)
		var at time.Time // the full node's refusal now; the other's long before the validator's retry
		if node == free1 {
			at = time.Now().Add(-time.Hour)
		}
		refused := testcluster.Rejected(snapshot.PluginWorkloadPrefix, node, snapshot.UnexpectedAdmissionError,
			"Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected", at,
			corev1.PodSpec{InitContainers: []corev1.Container{{Name: "plugin-validation", Image: "registry.example/fake:1", Resources: testcluster.GPUs(1)}},
				Containers: []corev1.Container{{Name: "nvidia-device-plugin-validator", Image: "registry.example/fake:1"}}})
		if _, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx, refused, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, n := range held {
			if _, err := env.Client.CoreV1().Pods(users).Create(ctx, testcluster.GPUPod(fmt.Sprintf("train-%d", i)+"-"+node, node, n), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Settled: on each node the three others run, the validator waits in
	// plugin-validation and its workload pod reads as refused.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running, waiting, refused := 0, 0, 0
		for i := range pods {
			p := snapshot.PodFrom(&pods[i])
			_, isRefused := p.RefusedDevice()
			switch {
			case isRefused:
				refused++
			case p.Health.Init == "plugin-validation":
				waiting++
			case p.Present() && p.Health.Ready:
				running++
			}
		}
		return running == 6 && waiting == 2 && refused == 2
	})

	// As health says it, once: the full node usable with its note.
	c := gpuopstest.Cluster{Kubeconfig: env.Kubeconfig, Namespace: env.Namespace}
	r := c.Run(t, "health", "--discover", "-l", testcluster.LabelTestID+"="+env.ID, "-o", "json")
	var got struct{ Nodes []health.Node }
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil || len(got.Nodes) != 2 {
		t.Fatalf("health -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	for _, n := range got.Nodes {
		switch {
		case n.Node == full && (!n.Usable || len(n.Notes) != 1 || n.Notes[0].Code != health.GPUsAllInUse):
			t.Errorf("health: the full node %+v, want usable with the note %s", n, health.GPUsAllInUse)
		case n.Node == free1 && (n.Usable || n.Cause.Code != health.InitWaiting || n.Cause.Operand != operand.OperatorValidator):
			t.Errorf("health: the node with a GPU free %+v, want unusable: init-waiting operator-validator", n)
		}
	}

	f := &fleet{env: env, ns: env.Namespace, c: c}
	s := f.serve(t, "--discover", "--quarantine=on", "--quarantine-after", "3s", "--release-after", "2s",
		"--quarantine-max", "10", "--quarantine-rate", "10")
	n := f.waitNode(t, free1, quarantined)
	var rec struct{ Code, Operand string }
	if err := json.Unmarshal([]byte(n.Annotations[operand.QuarantineAnnotation]), &rec); err != nil ||
		rec.Code != health.InitWaiting || rec.Operand != operand.OperatorValidator {
		t.Errorf("record %q (%v), want the cause init-waiting operator-validator", n.Annotations[operand.QuarantineAnnotation], err)
	}
	s.WaitFor(t, "the full node usable", func(m gpuopstest.Scrape) bool {
		v, ok := m.Value("gpuops_node_usable", map[string]string{"node": full})
		return ok && v == 1
	})
	// Past --quarantine-after once more: an unusable node would be due by
	// now, and nothing limits the quarantine.
	f.holds(t, 5*time.Second, "the full node", free, full)
	if events := f.events(t, full); slices.Contains(events, "GpuopsQuarantined") {
		t.Errorf("the full node was quarantined: Events %v", events)
	}
}
