package guard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
)

func daemonSetOf(name string) string {
	o, err := operand.Lookup(operand.Lab, name)
	if err != nil {
		panic(err)
	}
	return o.DaemonSet
}

// A refused opt-out or opt-in changes nothing and says what to do, on one line.
func TestRefusedChangesNothing(t *testing.T) {
	env := testcluster.New(t)
	n := lab(t, env, map[string][]string{"a": fullStack, "b": nil})
	a, b := n["a"], n["b"]
	work := t.TempDir()
	before := stateOf(t, env)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"optout", a, operand.ContainerToolkit, "--workdir", work},
			a + ": opting out container-toolkit would leave device-plugin, gpu-feature-discovery, dcgm-exporter without it; opt them out first, or use --with-dependents"},
		{[]string{"optout", a, operand.ContainerToolkit, "--workdir", work, "--dry-run", "-o", "json"}, ""},
		{[]string{"optin", b, operand.DevicePlugin},
			b + ": opting in device-plugin would leave it without container-toolkit; opt it in first, or use --with-dependencies"},
	} {
		r := gpuopstest.On(env).Run(t, tc.args...)
		if tc.want == "" { // a dry run prints the plan, breaks and all, then refuses
			var p plan.Plan
			if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil || len(p.Breaks) != 3 || r.Code != 2 {
				t.Errorf("%v: exit %d, plan %+v (%v), stderr %q", tc.args, r.Code, p, err, r.Stderr)
			}
			continue
		}
		if r.Code != 2 || r.Stdout != "" || r.Stderr != "error: "+tc.want+"\n" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, r.Code, r.Stdout, r.Stderr, tc.want)
		}
	}
	sameState(t, "the refused changes", before, stateOf(t, env))
	if _, err := os.Stat(filepath.Join(work, "out")); !os.IsNotExist(err) {
		t.Errorf("a refused optout wrote out/: %v", err)
	}
}

// podEvent is one thing that happened to a pod of a DaemonSet.
type podEvent struct{ daemonSet, what string } // what: added, running, going, deleted

// watchPods records, in order, the pod events of env's namespace from now
// on; stop ends the watch and returns them.
func watchPods(t *testing.T, env *testcluster.Env) (stop func() []podEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := env.Client.CoreV1().Pods(env.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []podEvent
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			p, isPod := e.Object.(*corev1.Pod)
			if !isPod || len(p.OwnerReferences) == 0 {
				continue
			}
			what := ""
			switch {
			case e.Type == watch.Deleted:
				what = "deleted"
			case p.DeletionTimestamp != nil:
				what = "going"
			case e.Type == watch.Added:
				what = "added"
			case p.Status.Phase == corev1.PodRunning:
				what = "running"
			}
			mu.Lock()
			events = append(events, podEvent{p.OwnerReferences[0].Name, what})
			mu.Unlock()
		}
	}()
	return func() []podEvent {
		w.Stop()
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return events
	}
}

// first is the index of the first event of the DaemonSet's pods, -1 if none.
func first(events []podEvent, daemonSet, what string) int {
	return slices.Index(events, podEvent{daemonSet, what})
}

func last(events []podEvent, daemonSet, what string) int {
	i := len(events) - 1
	for ; i >= 0 && events[i] != (podEvent{daemonSet, what}); i-- {
	}
	return i
}

// --with-dependents takes the toolkit's users off first and waits until
// their pods are gone; --with-dependencies brings the toolkit up first.
func TestDependencyOrder(t *testing.T) {
	env := testcluster.New(t)
	a := lab(t, env, map[string][]string{"a": fullStack})["a"]
	work := t.TempDir()

	stop := watchPods(t, env)
	r := gpuopstest.On(env).Want(t, 0, "optout", a, operand.ContainerToolkit, "--with-dependents", "--workdir", work)
	events := stop()
	toolkit := daemonSetOf(operand.ContainerToolkit)
	going := first(events, toolkit, "going")
	if going < 0 {
		t.Fatalf("the toolkit's pod never went: %v", events)
	}
	for _, dep := range []string{operand.DevicePlugin, operand.GPUFeatureDiscovery, operand.DCGMExporter} {
		if gone := last(events, daemonSetOf(dep), "deleted"); gone < 0 || gone > going {
			t.Errorf("%s's pod deleted at event %d, the toolkit's pod going at %d: want the dependent gone first\n%v", dep, gone, going, events)
		}
	}
	wantOut := fmt.Sprintf("node/%s labelled\nnode/%s labelled\n", a, a) +
		"daemonset.apps/nvidia-device-plugin-daemonset desiredNumberScheduled 1 -> 0\n" +
		"daemonset.apps/gpu-feature-discovery desiredNumberScheduled 1 -> 0\n" +
		"daemonset.apps/nvidia-dcgm-exporter desiredNumberScheduled 1 -> 0\n" +
		"daemonset.apps/nvidia-container-toolkit-daemonset desiredNumberScheduled 1 -> 0\n"
	if r.Stdout != wantOut {
		t.Errorf("optout --with-dependents:\n%s\nwant\n%s", r.Stdout, wantOut)
	}
	if got, _ := os.ReadFile(filepath.Join(work, "out", "optout.txt")); string(got) != "BEFORE=1\nAFTER=0\n" {
		t.Errorf("out/optout.txt (the toolkit's) = %q", got)
	}
	if r := gpuopstest.On(env).Run(t, "order-check", "--all-rules", a); r.Code != 0 || r.Stdout != "ok\n" {
		t.Errorf("order-check --all-rules after: exit %d, %q %q", r.Code, r.Stdout, r.Stderr)
	}
	want := deploy(operand.Driver, operand.ContainerToolkit+"=false", operand.DevicePlugin+"=false",
		operand.GPUFeatureDiscovery+"=false", operand.DCGMExporter+"=false")
	if got := labelsOf(t, env, a); !maps.Equal(got, want) {
		t.Errorf("labels after: %v, want %v", got, want)
	}

	// Back in, in start-up order: the toolkit Running before the device plugin's pod is made.
	stop = watchPods(t, env)
	gpuopstest.On(env).Want(t, 0, "optin", a, operand.DevicePlugin, "--with-dependencies")
	events = stop()
	running, added := first(events, toolkit, "running"), first(events, daemonSetOf(operand.DevicePlugin), "added")
	if running < 0 || added < 0 || running > added {
		t.Errorf("toolkit Running at event %d, device plugin's pod added at %d; want the toolkit first\n%v", running, added, events)
	}
	if r := gpuopstest.On(env).Run(t, "order-check", "--all-rules", a); r.Code != 0 || r.Stdout != "ok\n" {
		t.Errorf("order-check --all-rules after optin: exit %d, %q", r.Code, r.Stdout)
	}
}

// A dry run changes nothing, and what it predicts is what the real run gets.
func TestDryRunPredictsTheRealRun(t *testing.T) {
	env := testcluster.New(t)
	lab(t, env, map[string][]string{
		"a": fullStack,
		"b": {operand.Driver, operand.ContainerToolkit},
		"c": nil,
	})
	sel := testcluster.LabelTestID + "=" + env.ID
	before := stateOf(t, env)
	r := gpuopstest.On(env).Want(t, 0, "optin", "-l", sel, operand.DevicePlugin, "--with-dependencies", "--dry-run", "-o", "json")
	sameState(t, "the dry run", before, stateOf(t, env))
	var p plan.Plan
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("dry run -o json: %v\n%s", err, r.Stdout)
	}
	var predicted []string
	for _, d := range p.DaemonSets {
		predicted = append(predicted, fmt.Sprintf("daemonset.apps/%s desiredNumberScheduled %d -> %d", d.DaemonSet, d.Before, d.After))
	}
	want := []string{
		"daemonset.apps/nvidia-driver-daemonset desiredNumberScheduled 2 -> 3",
		"daemonset.apps/nvidia-container-toolkit-daemonset desiredNumberScheduled 2 -> 3",
		"daemonset.apps/nvidia-device-plugin-daemonset desiredNumberScheduled 1 -> 3",
	}
	if !slices.Equal(predicted, want) {
		t.Errorf("predicted:\n%s\nwant\n%s", strings.Join(predicted, "\n"), strings.Join(want, "\n"))
	}

	r = gpuopstest.On(env).Want(t, 0, "optin", "-l", sel, operand.DevicePlugin, "--with-dependencies")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if strings.HasPrefix(line, "daemonset.apps/") {
			got = append(got, line)
		}
	}
	if !slices.Equal(got, predicted) {
		t.Errorf("the real run:\n%s\nthe dry run predicted\n%s", strings.Join(got, "\n"), strings.Join(predicted, "\n"))
	}
}

// -l plans every node before writing any: one refused node stops them all.
func TestSelectorIsAllOrNothing(t *testing.T) {
	env := testcluster.New(t)
	n := lab(t, env, map[string][]string{
		"a": {operand.Driver, operand.ContainerToolkit, operand.DCGMExporter},
		"b": {operand.Driver, operand.ContainerToolkit, operand.DevicePlugin},
		"c": {operand.Driver, operand.ContainerToolkit},
	})
	a, b, c := n["a"], n["b"], n["c"]
	sel := testcluster.LabelTestID + "=" + env.ID
	work := t.TempDir()
	before := stateOf(t, env)
	r := gpuopstest.On(env).Run(t, "optout", "-l", sel, operand.ContainerToolkit, "--workdir", work)
	want := "error: " + a + ": opting out container-toolkit would leave dcgm-exporter without it; opt it out first, or use --with-dependents (and 1 more node)\n"
	if r.Code != 2 || r.Stdout != "" || r.Stderr != want {
		t.Errorf("optout -l: exit %d, stdout %q, stderr %q; want %q", r.Code, r.Stdout, r.Stderr, want)
	}
	sameState(t, "the refused optout -l", before, stateOf(t, env))

	// One node at a time, each through both steps.
	r = gpuopstest.On(env).Want(t, 0, "optout", "-l", sel, operand.ContainerToolkit, "--with-dependents", "--max-unavailable", "1", "--workdir", work)
	wantOut := fmt.Sprintf("node/%s labelled\nnode/%s labelled\nnode/%s labelled\nnode/%s labelled\nnode/%s labelled\n", a, a, b, b, c) +
		"daemonset.apps/nvidia-device-plugin-daemonset desiredNumberScheduled 1 -> 0\n" +
		"daemonset.apps/nvidia-dcgm-exporter desiredNumberScheduled 1 -> 0\n" +
		"daemonset.apps/nvidia-container-toolkit-daemonset desiredNumberScheduled 3 -> 0\n"
	if r.Stdout != wantOut {
		t.Errorf("optout -l --with-dependents --max-unavailable 1:\n%s\nwant\n%s", r.Stdout, wantOut)
	}

	// --force carries out a refused change, with a warning.
	r = gpuopstest.On(env).Want(t, 0, "optin", c, operand.DevicePlugin, "--force")
	if w := "warning: " + c + ": opting in device-plugin would leave it without container-toolkit; opt it in first, or use --with-dependencies; changing it anyway\n"; !strings.HasPrefix(r.Stderr, w) {
		t.Errorf("optin --force: stderr %q, want it to start %q", r.Stderr, w)
	}
	if r := gpuopstest.On(env).Run(t, "order-check", c); r.Code != 1 || r.Stdout != "device-plugin-without-toolkit\n" {
		t.Errorf("order-check after the forced optin: exit %d, %q", r.Code, r.Stdout)
	}
}
