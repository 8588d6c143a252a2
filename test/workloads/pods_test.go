package workloads_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/workload"
)

// TestPodsAgreesWithWhy: gpuops pods lists the namespace's stuck GPU pods
// grouped by cause, each as gpuops why answers it; -l narrows them,
// --stuck-after makes them waiting (exit 0), a malformed -l is exit 2.
func TestPodsAgreesWithWhy(t *testing.T) {
	env := testcluster.New(t)
	n := env.NodeName("full")
	env.AddNode(t, n, nil, devices(gpu, 8, 8))
	create(t, env, env.Namespace, pod("holder", n, gpu, 8))
	runs(t, env, "holder", n)
	big := pod("asks-16", "", gpu, 16)
	big.Labels = map[string]string{"team": "b"}
	create(t, env, env.Namespace, pod("asks-2", "", gpu, 2), big)
	unscheduled(t, env, "asks-2")
	unscheduled(t, env, "asks-16")

	c := gpuopstest.On(env)
	list := func(code int, args ...string) workload.PodsReport {
		t.Helper()
		r := c.Want(t, code, append([]string{"pods", "-o", "json"}, args...)...)
		var got workload.PodsReport
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("pods -o json %v: %v\n%s", args, err, r.Stdout)
		}
		return got
	}
	got := list(1, "--stuck-after", "1ns")
	var codes []string
	for _, a := range got.Pods {
		codes = append(codes, a.Pod+" "+a.Code)
		if w := why(t, env, strings.TrimPrefix(a.Pod, env.Namespace+"/")); !reflect.DeepEqual(w, a) {
			t.Errorf("pods says %+v\nwhy says %+v", a, w)
		}
	}
	ns := env.Namespace + "/"
	if want := []string{ns + "asks-2 " + workload.AllAllocated, ns + "asks-16 " + workload.ExceedsNode}; !reflect.DeepEqual(codes, want) {
		t.Errorf("pods: %q, want %q", codes, want)
	}
	if got := list(1, "--stuck-after", "1ns", "-l", "team=b"); len(got.Pods) != 1 || got.Pods[0].Pod != ns+"asks-16" {
		t.Errorf("pods -l team=b: %+v", got.Pods)
	}
	if got := list(0, "--stuck-after", "1h"); len(got.Pods) != 2 || got.Pods[0].State != workload.Waiting {
		t.Errorf("pods --stuck-after 1h: %+v, want both Waiting", got.Pods)
	}
	r := c.Want(t, 1, "pods", "--stuck-after", "1ns")
	if !strings.HasPrefix(r.Stdout, "all-allocated: 1\n  "+ns+"asks-2 Pending all-allocated "+n+": 8 of its 8 nvidia.com/gpu held by 1 pod(s): 1 in "+env.Namespace+": 0 free, asks 2\nexceeds-node: 1\n") {
		t.Errorf("pods:\n%s", r.Stdout)
	}
	c.WantError(t, "--selector", "pods", "-l", "a in (")
	c.WantError(t, "--stuck-after", "pods", "--stuck-after", "-1s")
}
