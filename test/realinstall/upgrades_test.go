package realinstall_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/upgrade"
)

// rolloutJSON is what upgrades -o json says, as far as the checks need.
type rolloutJSON struct {
	Budget struct {
		MaxUnavailable int
		Unavailable    []string
	}
	Nodes []upgrade.Node
}

// checkUpgrades: the driver rollout as the upgrade controller's rules make
// it (NVIDIA/k8s-operator-libs pkg/upgrade), on the install's nodes with the
// state labels its controller writes. maxUnavailable 1 is spent by the
// nodes cordoned for the upgrade already, so a node that needs one waits and
// the output names them; a state held three hours is stuck; upgrade-failed
// is failed; upgrade-done while the controller's cordon stays is left
// cordoned, while a person's cordon is the person's.
func (in *install) checkUpgrades(t *testing.T) {
	ctx := context.Background()
	patch := []byte(`{"spec":{"driver":{"upgradePolicy":{"autoUpgrade":true,"maxParallelUpgrades":0,"maxUnavailable":1}}}}`)
	if _, err := in.dyn.Resource(clusterPolicyGVR).Patch(ctx, in.policy.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	full, upgrading, stuck := in.nodes["full"], in.nodes["upgrade"], in.nodes["upgrade-stuck"]
	state := operand.UpgradeStateLabel
	// serve judges the rollout live all along: at each step its series say
	// of every node what upgrades -o json says (served below).
	serve := gpuopstest.On(in.env).Serve(t, "serve", "-l", in.selector())
	in.label(t, full, "gpu-operator", map[string]string{state: "upgrade-required"})
	// The controller moved upgrade-stuck to its state three hours ago.
	in.backdate(t, stuck, "gpu-operator", 3*time.Hour)

	r, got := in.rollout(t)
	in.served(t, serve)
	if r.Code != 1 {
		t.Errorf("upgrades: exit %d, want 1 (a node is stuck)\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	want := map[string]string{full: upgrade.Waiting, upgrading: upgrade.InProgress, stuck: upgrade.Stuck}
	for node, verdict := range want {
		if got[node].Verdict != verdict {
			t.Errorf("%s: %+v, want %s", node, got[node], verdict)
		}
	}
	if c := got[full].Cause; !strings.Contains(c, "maxUnavailable 1") || !strings.Contains(c, upgrading) {
		t.Errorf("the waiting node's cause %q does not name the budget and the cordoned node %s", c, upgrading)
	}
	text := in.judge(t, "upgrades").Stdout
	if !strings.Contains(text, full+" waiting upgrade-required") || !strings.Contains(text, "unavailable: ") || !strings.Contains(text, upgrading) {
		t.Errorf("upgrades:\n%s", text)
	}

	in.label(t, upgrading, "gpu-operator", map[string]string{state: "upgrade-failed"})
	if _, got = in.rollout(t); got[upgrading].Verdict != upgrade.Failed {
		t.Errorf("upgrade-failed: %+v", got[upgrading])
	}
	in.served(t, serve)

	// Done, and cordoned by a person: done. Cordoned again by the
	// controller (it cordons in cordon-required): left cordoned.
	in.label(t, upgrading, "gpu-operator", map[string]string{state: "upgrade-done"})
	if _, got = in.rollout(t); got[upgrading].Verdict != upgrade.Done {
		t.Errorf("upgrade-done, cordoned by the test: %+v", got[upgrading])
	}
	in.cordon(t, upgrading, "kubectl-cordon", false)
	in.cordon(t, upgrading, "gpu-operator", true)
	if _, got = in.rollout(t); got[upgrading].Verdict != upgrade.LeftCordoned {
		t.Errorf("upgrade-done, cordoned by the controller: %+v", got[upgrading])
	}
	in.served(t, serve)

	// The other nodes finish and are uncordoned: the budget is free, and the
	// waiting node gets its slot though no event touched it. serve must see
	// it too: the rollout is judged over every node, not the touched ones.
	in.cordon(t, upgrading, "gpu-operator", false)
	in.label(t, stuck, "gpu-operator", map[string]string{state: "upgrade-done"})
	in.cordon(t, stuck, "gpu-operator", false)
	if _, got = in.rollout(t); got[full].Verdict != upgrade.InProgress {
		t.Errorf("budget freed: %+v, want in-progress", got[full])
	}
	in.served(t, serve)
}

// served waits until serve's gpuops_driver_upgrade_node series give every
// node the verdict and state upgrades -o json gives it, the budget's
// available slots too, and fails with both if they do not within the
// patience of a settling cluster.
func (in *install) served(t *testing.T, s *gpuopstest.Server) {
	t.Helper()
	type part struct{ Verdict, State string }
	var oneShot, live map[string]part
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, nodes := in.rollout(t)
		oneShot = map[string]part{}
		for n, u := range nodes {
			oneShot[n] = part{u.Verdict, u.State}
		}
		live = map[string]part{}
		for _, m := range readyScrape(t, s).Samples("gpuops_driver_upgrade_node") {
			live[m.Labels["node"]] = part{m.Labels["verdict"], m.Labels["state"]}
		}
		return maps.Equal(oneShot, live), nil
	})
	if err != nil {
		t.Fatalf("serve and upgrades disagree on the rollout:\n upgrades %v\n serve    %v", oneShot, live)
	}
}

// rollout is upgrades -o json, node by node.
func (in *install) rollout(t *testing.T) (result struct {
	Code           int
	Stdout, Stderr string
}, nodes map[string]upgrade.Node) {
	t.Helper()
	r := in.judge(t, "upgrades", "-o", "json")
	var ro rolloutJSON
	if err := json.Unmarshal([]byte(r.Stdout), &ro); err != nil {
		t.Fatalf("upgrades -o json: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	nodes = map[string]upgrade.Node{}
	for _, n := range ro.Nodes {
		nodes[n.Node] = n
	}
	result.Code, result.Stdout, result.Stderr = r.Code, r.Stdout, r.Stderr
	return result, nodes
}

// cordon sets the node's spec.unschedulable as field manager manager.
func (in *install) cordon(t *testing.T, node, manager string, on bool) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": on}})
	if _, err := in.as(t, manager).CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("cordon %s as %s: %v", node, manager, err)
	}
}
