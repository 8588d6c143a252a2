package read_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/internal/fleettest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot/read"
)

// BenchmarkReadOneNode measures, on the real control plane with a fleet of
// 1,000 GPU nodes as big as real ones (fleettest.DressNode) running five
// operand pods each (fleettest.DressPodSpec), what order-check reads of one
// node (the node's metadata and its pods) against the whole-fleet read it
// made before (every node and pod), and the whole fleet's node metadata
// alone (audit, matrix), in the same run:
//
//	go test ./pkg/snapshot/read -run '^$' -bench ReadOneNode -benchtime 20x -timeout 30m
//
// (one -count: each runs the setup again)
func BenchmarkReadOneNode(b *testing.B) {
	const nodes = 1000
	env := testcluster.New(b)
	env.Timeout = 20 * time.Minute // KWOK starts 5,000 pods
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.QPS, cfg.Burst = -1, 0
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	b.Cleanup(func() {
		sel := metav1.ListOptions{LabelSelector: testcluster.LabelTestID + "=" + env.ID}
		if err := c.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, sel); err != nil {
			b.Errorf("delete the fleet: %v", err)
		}
	})
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for i := range nodes {
		g.Go(func() error {
			n := testcluster.FakeNode(env.NodeName(fmt.Sprint(i)), map[string]string{testcluster.LabelTestID: env.ID, "nvidia.com/gpu.present": "true"})
			fleettest.DressNode(n, i)
			if _, err := c.CoreV1().Nodes().Create(gctx, n, metav1.CreateOptions{}); err != nil {
				return err
			}
			for _, o := range operand.Lab {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", o.DaemonSet, i), Labels: map[string]string{"app": o.DaemonSet}},
					Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{
						Name: o.Name, Image: "nvcr.io/nvidia/" + o.Name + ":v1",
					}},
						// As a DaemonSet pod: a busy machine's late heartbeats must not evict it.
						Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					},
				}
				fleettest.DressPodSpec(&p.Spec, o.Name)
				if _, err := c.CoreV1().Pods(env.Namespace).Create(gctx, p, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	env.WaitForPods(b, env.Namespace, func(pods []corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == nodes*len(operand.Lab)
	})

	cf := kube.NewFlags()
	cf.KubeConfig = &env.Kubeconfig
	clients, err := kube.Connect(cf)
	if err != nil {
		b.Fatal(err)
	}
	one := env.NodeName(fmt.Sprint(nodes / 2))
	for _, bc := range []struct {
		name  string
		opts  read.Options
		nodes int
	}{
		{"read=whole-fleet", read.Options{}, nodes},
		{"read=one-node", read.Options{Node: one, DeployLabelsOnly: true}, 1},
		{"read=whole-fleet-metadata", read.Options{DeployLabelsOnly: true}, nodes},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				s, err := read.Snapshot(ctx, clients.Kube, env.Namespace, bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Nodes) != bc.nodes || len(s.Pods) != bc.nodes*len(operand.Lab) {
					b.Fatalf("read %d nodes and %d pods, want %d and %d", len(s.Nodes), len(s.Pods), bc.nodes, bc.nodes*len(operand.Lab))
				}
			}
		})
	}
}
