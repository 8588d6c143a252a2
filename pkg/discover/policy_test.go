package discover_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// offs lists "operand: why" for every operand of the roster that is off.
func offs(r discover.Picked) []string {
	var out []string
	for _, o := range r.Roster {
		if o.Off != "" {
			out = append(out, o.Name+": "+o.Off)
		}
	}
	return out
}

func TestPolicySwitches(t *testing.T) {
	dss := realInstall(t) // driver, sandbox and DRA operands, among others
	policy := func(enabled map[string]bool, mods ...func(*snapshot.ClusterPolicy)) *snapshot.ClusterPolicy {
		p := &snapshot.ClusterPolicy{Name: "cp", Namespace: "gpu-operator", Enabled: enabled}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	nvd := func(p *snapshot.ClusterPolicy) { p.NVIDIADriverCRD = true }
	for _, tc := range []struct {
		name    string
		policy  *snapshot.ClusterPolicy
		drivers []snapshot.NVIDIADriver
		want    []string
	}{
		{"no policy", nil, nil, nil},
		{"the chart's defaults", policy(map[string]bool{"driver": true, "toolkit": true, "dcgm": false, "vfioManager": true, "sandboxDevicePlugin": true, "sandboxWorkloads": false}), nil, []string{
			"dcgm: ClusterPolicy cp: spec.dcgm.enabled is false",
			"node-status-exporter: ClusterPolicy cp: spec.nodeStatusExporter.enabled is not set (off by default)",
			"sandbox-validator: ClusterPolicy cp: spec.sandboxWorkloads.enabled is false",
			"vfio-manager: ClusterPolicy cp: spec.sandboxWorkloads.enabled is false",
			"sandbox-device-plugin: ClusterPolicy cp: spec.sandboxWorkloads.enabled is false",
		}},
		{"host driver and toolkit", policy(map[string]bool{"driver": false, "toolkit": false, "nodeStatusExporter": true, "sandboxWorkloads": true, "vfioManager": true, "sandboxDevicePlugin": true, "dcgm": true}), nil, []string{
			"driver: ClusterPolicy cp: spec.driver.enabled is false",
			"container-toolkit: ClusterPolicy cp: spec.toolkit.enabled is false",
		}},
		{"kata mode", policy(map[string]bool{"sandboxWorkloads": true, "vfioManager": true, "sandboxDevicePlugin": true, "nodeStatusExporter": true}, func(p *snapshot.ClusterPolicy) { p.SandboxMode = "kata" }), nil, []string{
			"sandbox-device-plugin: ClusterPolicy cp: spec.sandboxWorkloads.mode is kata",
		}},
		{"NVIDIADriver without an object", policy(map[string]bool{"driver": true, "nodeStatusExporter": true, "sandboxWorkloads": true, "vfioManager": true, "sandboxDevicePlugin": true}, nvd), []snapshot.NVIDIADriver{}, []string{
			"driver: ClusterPolicy cp: spec.driver.useNvidiaDriverCRD is true and no NVIDIADriver renders a driver",
		}},
		{"NVIDIADriver objects not read", policy(map[string]bool{"driver": true, "nodeStatusExporter": true, "sandboxWorkloads": true, "vfioManager": true, "sandboxDevicePlugin": true}, nvd), nil, nil},
		{"only a vGPU host manager NVIDIADriver", policy(map[string]bool{"nodeStatusExporter": true, "sandboxWorkloads": true, "vfioManager": true, "sandboxDevicePlugin": true}, nvd),
			[]snapshot.NVIDIADriver{{Name: "vgpu", DriverType: "vgpu-host-manager"}}, []string{
				"driver: ClusterPolicy cp: spec.driver.useNvidiaDriverCRD is true and no NVIDIADriver renders a driver",
			}},
		{"NVIDIADriver of type gpu, even with driver.enabled false", policy(map[string]bool{"driver": false, "nodeStatusExporter": true, "sandboxWorkloads": true, "vfioManager": true, "sandboxDevicePlugin": true}, nvd),
			[]snapshot.NVIDIADriver{{Name: "default", DriverType: "gpu"}}, nil},
		{"the policy of another namespace", policy(nil, func(p *snapshot.ClusterPolicy) {
			p.Namespace = "elsewhere"
			p.Enabled = map[string]bool{"driver": false}
		}), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Namespace: "gpu-operator", DaemonSets: dss, Policy: tc.policy, NVIDIADrivers: tc.drivers}
			r := discover.For(s, discover.Discover)
			if got := offs(r); !slices.Equal(got, tc.want) {
				t.Errorf("off:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestChoice(t *testing.T) {
	lab := func() []snapshot.DaemonSet {
		var dss []snapshot.DaemonSet
		for _, o := range operand.Lab {
			dss = append(dss, snapshot.DaemonSet{Name: o.DaemonSet, NodeSelector: map[string]string{o.LabelKey(): "true"}})
		}
		return dss
	}
	validator := snapshot.DaemonSet{Name: "nvidia-operator-validator", NodeSelector: map[string]string{operand.LabelPrefix + "operator-validator": "true"}}
	names := func(r discover.Picked) []string {
		var out []string
		for _, o := range r.Roster {
			out = append(out, o.Name)
		}
		return out
	}
	labNames := names(discover.Picked{Roster: operand.Lab})
	withValidator := append(slices.Clone(labNames), "operator-validator")
	for _, tc := range []struct {
		name   string
		s      *snapshot.Snapshot
		choice discover.Choice
		want   []string
		note   string
	}{
		{"the lab", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), validator)}, discover.Auto, labNames, ""},
		{"a ClusterPolicy for the namespace", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), validator),
			Policy: &snapshot.ClusterPolicy{Name: "cp", Namespace: "ns"}}, discover.Auto, withValidator, "ClusterPolicy cp renders them"},
		{"a ClusterPolicy not yet reconciled", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), validator),
			Policy: &snapshot.ClusterPolicy{Name: "cp"}}, discover.Auto, withValidator, "ClusterPolicy cp renders them"},
		{"a ClusterPolicy for another namespace", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), validator),
			Policy: &snapshot.ClusterPolicy{Name: "cp", Namespace: "other"}}, discover.Auto, labNames, "ClusterPolicy cp manages namespace other, not ns"},
		{"the chart's label", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), snapshot.DaemonSet{Name: validator.Name, NodeSelector: validator.NodeSelector,
			Labels: map[string]string{operand.ManagedByLabel: "gpu-operator"}})}, discover.Auto, withValidator, "DaemonSet nvidia-operator-validator is labelled app.kubernetes.io/managed-by=gpu-operator"},
		{"controlled by a GPUCluster", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), snapshot.DaemonSet{Name: validator.Name, NodeSelector: validator.NodeSelector,
			Controller: "GPUCluster.nvidia.com"})}, discover.Auto, withValidator, "DaemonSet nvidia-operator-validator is controlled by a GPUCluster.nvidia.com"},
		{"another manager's label", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), snapshot.DaemonSet{Name: validator.Name, NodeSelector: validator.NodeSelector,
			Labels: map[string]string{operand.ManagedByLabel: "Helm"}, Controller: "Deployment.apps"})}, discover.Auto, labNames, ""},
		{"--discover=false on an install", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), validator),
			Policy: &snapshot.ClusterPolicy{Name: "cp", Namespace: "ns"}}, discover.Lab, labNames, ""},
		{"--discover on the lab", &snapshot.Snapshot{Namespace: "ns", DaemonSets: append(lab(), validator)}, discover.Discover, withValidator, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := discover.For(tc.s, tc.choice)
			if got := names(r); !slices.Equal(got, tc.want) {
				t.Errorf("roster %q, want %q", got, tc.want)
			}
			if joined := strings.Join(r.Notes, "\n"); (tc.note == "") != (joined == "") || !strings.Contains(joined, tc.note) {
				t.Errorf("notes %q, want one with %q", r.Notes, tc.note)
			}
		})
	}
}
