package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/collect"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// BenchmarkFrom measures the judges that read a workload fleet's bundle
// (--from): health, capacity and pods over 1,000 nodes as big as real ones
// (fleettest.DressNode), their operand pods and 5,000 users' pods, one in
// five asking a GPU, as collect writes it (collected from the fleet served
// in process, as BenchmarkCollect reads it):
//
//	go test ./cmd/gpuops -run '^$' -bench From -benchtime 3x
func BenchmarkFrom(b *testing.B) {
	fleet := filepath.Join(b.TempDir(), "fleet.json")
	writeFleetBundle(b, fleet, 1000, 5000)
	path := filepath.Join(b.TempDir(), "bundle.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	collectBundle(b, servedBundle(b, fleet), f)
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	for _, judge := range [][]string{{"health"}, {"capacity"}, {"pods", "--operator-namespace", "gpu-operator"}} {
		b.Run(judge[0], func(b *testing.B) {
			for b.Loop() {
				code := run(context.Background(), append(append([]string{"gpuops"}, judge...), "--from", path), io.Discard, io.Discard)
				if code > 1 {
					b.Fatalf("%s --from: exit %d", judge[0], code)
				}
			}
		})
	}
}

// BenchmarkCollect measures collect's work, reading and writing, on the
// fleet BenchmarkFrom reads, served in process by the bundle's server
// (protobuf for the built-in kinds, as an API server answers; its encoding
// is in the timing, the same whatever collect keeps):
//
//	go test ./cmd/gpuops -run '^$' -bench Collect -benchtime 3x
func BenchmarkCollect(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bundle.json")
	writeFleetBundle(b, path, 1000, 5000)
	c := servedBundle(b, path)
	var size counter // the bundle's bytes: what a pod kept costs the user
	for b.Loop() {
		size = 0
		collectBundle(b, c, &size)
	}
	b.ReportMetric(float64(size), "bundle-B")
}

// servedBundle is a client of the bundle at path, served in process.
func servedBundle(tb testing.TB, path string) kubernetes.Interface {
	tb.Helper()
	loaded, err := bundle.Load(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := kube.InProcess(bundle.NewServer(loaded))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// collectBundle writes to w the bundle collect writes of the cluster c.
func collectBundle(tb testing.TB, c kubernetes.Interface, w io.Writer) {
	tb.Helper()
	h, items, err := collect.Collect(context.Background(), c, collect.Options{Namespace: "gpu-operator"})
	if err == nil {
		err = bundle.Write(w, false, h, items)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// counter counts the bytes written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

// writeFleetBundle writes a bundle of nodes GPU nodes, each running the
// lab's operands, and workloads users' pods spread over them.
func writeFleetBundle(tb testing.TB, path string, nodes, workloads int) {
	tb.Helper()
	const ns = "gpu-operator"
	now := metav1.NewTime(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	var items []runtime.Object
	add := func(apiVersion, kind string, o runtime.Object) {
		o.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, kind))
		items = append(items, o)
	}
	running := func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, HostIP: "10.0.0.1", PodIP: "10.128.0.1"}
		for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
				Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
	}
	for _, o := range operand.Lab {
		add("apps/v1", "DaemonSet", &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: o.DaemonSet, Namespace: ns, Generation: 1},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{o.LabelKey(): "true"}}}},
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: int32(nodes), CurrentNumberScheduled: int32(nodes), NumberReady: int32(nodes),
				UpdatedNumberScheduled: int32(nodes), NumberAvailable: int32(nodes), ObservedGeneration: 1}})
	}
	for i := range nodes {
		labels := map[string]string{"nvidia.com/gpu.present": "true"}
		for _, o := range operand.Lab {
			labels[o.LabelKey()] = "true"
		}
		n := testcluster.FakeNode(fmt.Sprintf("gpu-%05d", i), labels)
		fleettest.DressNode(n, i)
		n.Status.Capacity[snapshot.GPUResource] = resource.MustParse("8")
		n.Status.Allocatable[snapshot.GPUResource] = resource.MustParse("8")
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now}}
		add("v1", "Node", n)
		for _, o := range operand.Lab {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", o.DaemonSet, i), Namespace: ns, CreationTimestamp: now,
				Labels:          map[string]string{"app": o.DaemonSet},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: o.DaemonSet, Controller: new(true)}}},
				Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: o.Name, Image: "nvcr.io/nvidia/" + o.Name + ":v1"}}}}
			fleettest.DressPodSpec(&p.Spec, o.Name)
			running(p)
			add("v1", "Pod", p)
		}
	}
	for i := range workloads {
		limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
		if i%5 == 0 {
			limits[snapshot.GPUResource] = resource.MustParse("1")
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("wl-%06d", i), Namespace: fmt.Sprintf("team-%d", i%8), CreationTimestamp: now,
			Labels: map[string]string{"app.kubernetes.io/name": "worker"}},
			Spec: corev1.PodSpec{NodeName: fmt.Sprintf("gpu-%05d", i%nodes), Containers: []corev1.Container{{Name: "main", Image: "registry.example/worker:2.4.1",
				Command: []string{"python", "-m", "worker"}, Resources: corev1.ResourceRequirements{Requests: limits, Limits: limits}}}}}
		running(p)
		add("v1", "Pod", p)
	}
	h := &bundle.Header{APIVersion: bundle.HeaderAPIVersion, Kind: bundle.HeaderKind, Metadata: bundle.Metadata{Name: "gpuops"},
		Time: now.Time, Namespace: ns}
	for _, k := range bundle.Kinds {
		h.Read = append(h.Read, bundle.Read{Resource: k.Qualified()})
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := bundle.Write(f, false, h, items); err != nil {
		tb.Fatal(err)
	}
}
