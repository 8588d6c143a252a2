package judge_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestStuck(t *testing.T) {
	now := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC)
	paused := func(value string, ago time.Duration, ops ...operand.Operand) snapshot.Node {
		n := snapshot.Node{Labels: map[string]string{}, LabelChanges: map[string]snapshot.LabelChange{}}
		for _, o := range ops {
			n.Labels[o.LabelKey()] = value
			if ago > 0 {
				n.LabelChanges[o.LabelKey()] = snapshot.LabelChange{Manager: "driver-manager", Time: now.Add(-ago)}
			}
		}
		return n
	}
	for _, tc := range []struct {
		name string
		node snapshot.Node
		want []string
	}{
		{"paused 3h ago", paused("paused-for-driver-upgrade", 3*time.Hour, toolkit, plugin), []string{"container-toolkit", "device-plugin"}},
		{"a suffixed pause", paused("pre-installed_paused-for-driver-upgrade", 3*time.Hour, driver), []string{"driver"}},
		{"a MIG change 2h ago", paused("paused-for-mig-change", 2*time.Hour, gfd), []string{"gpu-feature-discovery"}},
		{"paused 10m ago", paused("paused-for-driver-upgrade", 10*time.Minute, toolkit), nil},
		{"paused, age unknown", paused("paused-for-driver-upgrade", 0, toolkit), nil},
		{"not a pause", paused("pre-installed", 3*time.Hour, driver), nil},
		{"false for long", paused("false", 3*time.Hour, toolkit), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.node.Name = "n"
			s := &snapshot.Snapshot{Nodes: []snapshot.Node{tc.node}}
			audits := judge.Audit(s, operand.Lab)
			judge.Stuck(audits, s, operand.Lab, now, 30*time.Minute)
			if !slices.Equal(audits[0].Stuck, tc.want) {
				t.Errorf("stuck %q, want %q", audits[0].Stuck, tc.want)
			}
			if audits[0].OK() != (tc.want == nil) || judge.AuditFailed(audits) == (tc.want == nil) {
				t.Errorf("OK %v with stuck %q", audits[0].OK(), audits[0].Stuck)
			}
		})
	}
	// --stuck-after 0: no pause is stuck.
	s := &snapshot.Snapshot{Nodes: []snapshot.Node{paused("paused-for-driver-upgrade", 3*time.Hour, toolkit)}}
	s.Nodes[0].Name = "n"
	audits := judge.Audit(s, operand.Lab)
	if judge.Stuck(audits, s, operand.Lab, now, 0); !audits[0].OK() {
		t.Errorf("stuck after 0: %+v, want OK", audits[0])
	}
}
