package live

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The items taken split into the nodes to judge and whether the scope is
// decided again: on a DaemonSet's change, and on a ConfigMap's only when the
// policy names it.
func TestSortOut(t *testing.T) {
	tr := &Tracker{operator: snapshot.Snapshot{Policy: &snapshot.ClusterPolicy{Offer: snapshot.OfferPolicy{DevicePluginConfig: "plugin-configs"}}}}
	for _, tc := range []struct {
		in     []item
		names  []string
		replan bool
	}{
		{[]item{judgeNode("node-a"), {configChanged, "leader-record"}}, []string{"node-a"}, false},
		{[]item{{configChanged, "leader-record"}}, nil, false},
		{[]item{{configChanged, "plugin-configs"}, judgeNode("node-b")}, []string{"node-b"}, true},
		{[]item{judgeNode("node-c"), {kind: daemonSetsChanged}}, []string{"node-c"}, true},
	} {
		names, replan := tr.sortOut(tc.in)
		if !slices.Equal(names, tc.names) || replan != tc.replan {
			t.Errorf("%v: %q %v, want %q %v", tc.in, names, replan, tc.names, tc.replan)
		}
	}
	if _, replan := (&Tracker{}).sortOut([]item{{configChanged, "plugin-configs"}}); replan {
		t.Error("without a policy no ConfigMap is named")
	}
}
