package live

import (
	"slices"
	"testing"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// A changed ConfigMap is taken out of the batch's names, and asks for the
// configs to be read again only when the policy names it.
func TestConfigsChanged(t *testing.T) {
	tr := &Tracker{operator: snapshot.Snapshot{Policy: &snapshot.ClusterPolicy{Offer: snapshot.OfferPolicy{DevicePluginConfig: "plugin-configs"}}}}
	for _, tc := range []struct {
		in    []string
		names []string
		named bool
	}{
		{[]string{"node-a", configChanged + "leader-record"}, []string{"node-a"}, false},
		{[]string{configChanged + "leader-record"}, []string{}, false},
		{[]string{configChanged + "plugin-configs", "node-b"}, []string{"node-b"}, true},
	} {
		names, named := tr.configsChanged(slices.Clone(tc.in))
		if !slices.Equal(names, tc.names) || named != tc.named {
			t.Errorf("%q: %q %v, want %q %v", tc.in, names, named, tc.names, tc.named)
		}
	}
	if _, named := (&Tracker{}).configsChanged([]string{configChanged + "plugin-configs"}); named {
		t.Error("without a policy no ConfigMap is named")
	}
}
