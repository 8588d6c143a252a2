package read

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

func TestPickClusterPolicy(t *testing.T) {
	body := `{"items": [
	  {"metadata": {"name": "z-spare"}, "status": {"state": "ignored"}},
	  {"metadata": {"name": "cluster-policy"},
	   "spec": {
	     "operator": {"defaultRuntime": "containerd"},
	     "driver": {"enabled": false, "useNvidiaDriverCRD": true, "version": "595.91.07"},
	     "toolkit": {"enabled": true},
	     "dcgm": {"enabled": false},
	     "gds": null,
	     "sandboxWorkloads": {"enabled": true, "mode": "kata"},
	     "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu"}]}
	   },
	   "status": {"state": "ready", "namespace": "gpu-operator"}},
	  {"metadata": {"name": "a-ignored"}, "spec": {"driver": {"enabled": true}}, "status": {"state": "ignored"}}
	]}`
	var list struct{ Items []clusterPolicy }
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	got := pick(list.Items)
	want := &snapshot.ClusterPolicy{
		Name: "cluster-policy", Namespace: "gpu-operator",
		Enabled:     map[string]bool{"driver": false, "toolkit": true, "dcgm": false, "sandboxWorkloads": true},
		SandboxMode: "kata", NVIDIADriverCRD: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pick:\n got %+v\nwant %+v", got, want)
	}
	if got := pick(list.Items[:1]); got != nil {
		t.Errorf("only ignored policies: %+v, want none", got)
	}
}
