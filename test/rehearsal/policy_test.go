package rehearsal_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/gpuops/gpuops/pkg/rehearsal"
)

// The walk again, with nodes a, b and c all schedulable, under a
// ClusterPolicy that turns autoUpgrade on with maxParallelUpgrades 1 and
// maxUnavailable 25% (1 of 3 nodes), the controller's budget as pkg/upgrade
// counts it: the first upgrade-required node in order gets the slot and is
// in progress before it moves; the others wait while a node is past
// upgrade-required and not done (a failed one keeps its slot); the moment
// one is done, the next upgrade-required node has the slot. The walk goes
// one node at a time in the same order, so it never contradicts the budget.
var policyTable = walk("", `OOO POO PWO PWW
	PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW PWW DPW
	DPW DPW DPW DPW DPW DPW DPW DPW DPW DPW DPW DPW DDP
	DDP DDP DDP DDP DDP DDP DDP DDP DDP DDP DDF DDF DDF DDF DDP DDP DDD
	DDD DDD DDD`)

// TestDriverUpgradeRehearsalWithPolicy: with the policy, the verdicts follow
// the controller's budget at every step.
func TestDriverUpgradeRehearsalWithPolicy(t *testing.T) {
	r := newRig(t, false)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(r.g.env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	policy := rehearsal.Policy("cluster-policy-"+r.g.env.ID, map[string]any{"driver": map[string]any{"upgradePolicy": map[string]any{
		"autoUpgrade": true, "maxParallelUpgrades": int64(1), "maxUnavailable": "25%"}}})
	in, err := rehearsal.InstallPolicy(ctx, dyn, policy, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Gone before the next test, which judges a cluster without a policy.
	t.Cleanup(func() {
		if err := in.Remove(context.Background()); err != nil {
			t.Error(err)
		}
	})
	r.rehearse(policyTable)
}
