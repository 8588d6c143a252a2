package snapshot_test

import (
	"reflect"
	"testing"

	"github.com/gpuops/gpuops/pkg/snapshot"
)

// ParseSharingConfig reads a config as the device plugin does.
func TestParseSharingConfig(t *testing.T) {
	gpu := func(replicas int64, as string) []snapshot.SharedResource {
		return []snapshot.SharedResource{{Name: "nvidia.com/gpu", Replicas: replicas, As: as}}
	}
	for _, tc := range []struct {
		name, text string
		want       snapshot.SharingConfig
	}{
		{"time-slicing renamed", "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n",
			snapshot.SharingConfig{Kind: snapshot.TimeSlicing, Resources: gpu(4, "nvidia.com/gpu.shared")}},
		{"a rename of its own is ignored", "sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 2, rename: mine}\n",
			snapshot.SharingConfig{Kind: snapshot.TimeSlicing, Resources: gpu(2, "nvidia.com/gpu")}},
		{"MPS wins over time-slicing", "sharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 2}\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 8}\n",
			snapshot.SharingConfig{Kind: snapshot.MPS, Resources: gpu(8, "nvidia.com/gpu")}},
		{"renameByDefault under flags: ignored, and said", "flags:\n  renameByDefault: true\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n",
			snapshot.SharingConfig{Kind: snapshot.TimeSlicing, Resources: gpu(4, "nvidia.com/gpu"), RenameIgnored: true}},
		{"no sharing", "version: v1\nflags:\n  migStrategy: mixed\n", snapshot.SharingConfig{}},
		{"not YAML", "sharing: [", snapshot.SharingConfig{Error: "error converting YAML to JSON: yaml: line 1: did not find expected node content"}},
	} {
		if got := snapshot.ParseSharingConfig(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// A layout whose entries filter by GPU model applies one variant a node;
// the entries without a filter apply in each.
func TestParseMIGConfigsVariants(t *testing.T) {
	got, err := snapshot.ParseMIGConfigs(`version: v1
mig-configs:
  mine:
  - devices: [0, 1]
    mig-enabled: false
  - device-filter: ["0x20B210DE", "0x20B510DE"]
    devices: all
    mig-enabled: true
    mig-devices: {"1g.10gb": 7}
  - device-filter: "0x233010DE"
    devices: all
    mig-enabled: true
    mig-devices: {"1g.20gb": 7}
`)
	if err != nil {
		t.Fatal(err)
	}
	listed := snapshot.MIGEntry{Devices: 2}
	a100 := snapshot.MIGEntry{Filter: []string{"0x20B210DE", "0x20B510DE"}, All: true, Enabled: true, Profile: map[string]int64{"1g.10gb": 7}}
	h100 := snapshot.MIGEntry{Filter: []string{"0x233010DE"}, All: true, Enabled: true, Profile: map[string]int64{"1g.20gb": 7}}
	if want := [][]snapshot.MIGEntry{{listed, a100}, {listed, h100}}; !reflect.DeepEqual(snapshot.Variants(got["mine"]), want) {
		t.Errorf("variants %+v, want %+v", snapshot.Variants(got["mine"]), want)
	}
	if _, err := snapshot.ParseMIGConfigs("mig-configs: ["); err == nil {
		t.Error("a config that is not YAML parsed")
	}
	if got := snapshot.MIGResource("1g.5gb+me"); got != "nvidia.com/mig-1g.5gb.me" {
		t.Errorf("MIGResource: %s", got)
	}
}
