package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
)

// upRounds are the timings of `gpuops up` and of its floor, round by round.
type upRounds struct {
	floor, up []time.Duration
	pods      int // operand pods the DaemonSets run once ready
}

// upVsFloor times `gpuops up` (label the fleet's nodes, apply the five
// DaemonSets, wait until they have settled, write out/) against its floor,
// in interleaved rounds on the same nodes: the DaemonSet controller alone
// creating the same pods and counting them ready, when plain `kubectl apply`
// applies the DaemonSets to nodes whose deploy labels are already there.
// Between runs the namespace is deleted (and waited for) and the deploy
// labels removed. The last run is an up, which leaves the fleet provisioned.
func upVsFloor(ctx context.Context, c kubernetes.Interface, fleet []fleetNode, rounds int, env []string, gpuopsBin, labFile, tmp string) (*upRounds, error) {
	ns := kube.DefaultNamespace
	manifests := filepath.Join(tmp, "floor-manifests")
	if err := writeManifests(manifests, ns); err != nil {
		return nil, err
	}
	want := map[string]int32{}
	res := &upRounds{}
	for _, o := range operand.Lab {
		for _, f := range fleet {
			if f.runs(o) {
				want[o.DaemonSet]++
				res.pods++
			}
		}
	}
	for round := 1; round <= rounds; round++ {
		if err := labelFleet(ctx, c, fleet, true); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := sh(ctx, env, "kubectl", "apply", "-f", manifests); err != nil {
			return nil, err
		}
		if err := waitDaemonSetsReady(ctx, c, ns, want); err != nil {
			return nil, err
		}
		res.floor = append(res.floor, time.Since(start))
		logf("round %d/%d: floor %.1f s", round, rounds, res.floor[len(res.floor)-1].Seconds())
		if err := teardown(ctx, c, ns, fleet); err != nil {
			return nil, err
		}

		start = time.Now()
		err := sh(ctx, env, gpuopsBin, "up", "--lab", labFile, "--workdir", filepath.Join(tmp, "workdir"), "--timeout", "30m")
		if err != nil {
			return nil, err
		}
		res.up = append(res.up, time.Since(start))
		logf("round %d/%d: gpuops up %.1f s", round, rounds, res.up[len(res.up)-1].Seconds())
		if round < rounds {
			if err := teardown(ctx, c, ns, fleet); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// writeManifests writes the namespace and the five rendered DaemonSets into
// dir, for kubectl apply -f dir.
func writeManifests(dir, ns string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	nsYAML := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
	if err := os.WriteFile(filepath.Join(dir, "00-namespace.yaml"), []byte(nsYAML), 0o644); err != nil {
		return err
	}
	ms, err := render.Operands(gpuops.Kustomize, operand.Lab, ns)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := os.WriteFile(filepath.Join(dir, m.Operand.Manifest), m.YAML, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// labelFleet sets (or removes) every node's deploy labels, 64 nodes at a time.
func labelFleet(ctx context.Context, c kubernetes.Interface, fleet []fleetNode, set bool) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, f := range fleet {
		labels := map[string]any{}
		for k, v := range f.deployLabels() {
			if set {
				labels[k] = v
			} else {
				labels[k] = nil
			}
		}
		if len(labels) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if err != nil {
			return err
		}
		g.Go(func() error {
			_, err := c.CoreV1().Nodes().Patch(ctx, f.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "gpuops-bench"})
			if err != nil {
				return fmt.Errorf("label node %s: %w", f.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// teardown deletes the namespace, waits until it is gone with all its pods,
// and removes the deploy labels.
func teardown(ctx context.Context, c kubernetes.Interface, ns string, fleet []fleetNode) error {
	start := time.Now()
	err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "namespaces", metav1.NamespaceAll,
		fields.OneTermEqualSelector("metadata.name", ns))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	var store cache.Store
	gone := func() (bool, error) { return len(store.List()) == 0, nil }
	_, err = watchtools.UntilWithSync(wctx, lw, &corev1.Namespace{},
		func(s cache.Store) (bool, error) { store = s; return gone() },
		func(watch.Event) (bool, error) { return gone() })
	if err != nil {
		return fmt.Errorf("waiting for namespace %s to go: %w", ns, err)
	}
	if err := labelFleet(ctx, c, fleet, false); err != nil {
		return err
	}
	logf("teardown (namespace deleted, labels removed): %.1f s", time.Since(start).Seconds())
	return nil
}

// waitDaemonSetsReady watches the namespace's DaemonSets until each named in
// want has seen its generation and counts want[name] pods desired, updated,
// ready and available.
func waitDaemonSetsReady(ctx context.Context, c kubernetes.Interface, ns string, want map[string]int32) error {
	lw := cache.NewListWatchFromClient(c.AppsV1().RESTClient(), "daemonsets", ns, fields.Everything())
	var store cache.Store
	var behind []string
	ready := func() (bool, error) {
		behind = behind[:0]
		for name, n := range want {
			obj, ok, _ := store.GetByKey(ns + "/" + name)
			if !ok {
				behind = append(behind, name+" missing")
				continue
			}
			ds := obj.(*appsv1.DaemonSet)
			s := ds.Status
			if s.ObservedGeneration < ds.Generation || s.DesiredNumberScheduled != n || s.UpdatedNumberScheduled != n ||
				s.NumberReady != n || s.NumberAvailable != n {
				behind = append(behind, fmt.Sprintf("%s %d/%d ready", name, s.NumberReady, n))
			}
		}
		return len(behind) == 0, nil
	}
	wctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	_, err := watchtools.UntilWithSync(wctx, lw, &appsv1.DaemonSet{},
		func(s cache.Store) (bool, error) { store = s; return ready() },
		func(watch.Event) (bool, error) { return ready() })
	if err != nil {
		slices.Sort(behind)
		return fmt.Errorf("waiting for the DaemonSets to be ready (%s): %w", strings.Join(behind, ", "), err)
	}
	return nil
}

// markdown is the report's section for the rounds.
func (r *upRounds) markdown() string {
	var b strings.Builder
	med := func(d []time.Duration) time.Duration { return result{walls: d}.median() }
	list := func(d []time.Duration) string {
		s := make([]string, len(d))
		for i, x := range d {
			s[i] = fmt.Sprintf("%.1f", x.Seconds())
		}
		return strings.Join(s, ", ")
	}
	fmt.Fprintf(&b, "`gpuops up` against its floor, %d interleaved rounds, %d operand pods each run:\n\n", len(r.up), r.pods)
	b.WriteString("| what | median wall | × floor | rounds (s) |\n|---|---:|---:|---|\n")
	fmt.Fprintf(&b, "| floor: `kubectl apply` of the 5 DaemonSets to labelled nodes, until their status counts every pod ready | %.1f s | 1.00 | %s |\n",
		med(r.floor).Seconds(), list(r.floor))
	fmt.Fprintf(&b, "| `gpuops up` (label the nodes, apply, wait until settled, write out/) | %.1f s | %.2f | %s |\n\n",
		med(r.up).Seconds(), float64(med(r.up))/float64(med(r.floor)), list(r.up))
	return b.String()
}
