package discover_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpuops/gpuops/pkg/discover"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// realInstall reads the DaemonSets of testdata/gpu-operator.yaml.
func realInstall(t *testing.T) []snapshot.DaemonSet {
	t.Helper()
	data, err := os.ReadFile("testdata/gpu-operator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []snapshot.DaemonSet
	for {
		var d appsv1.DaemonSet
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("testdata/gpu-operator.yaml: %v", err)
		}
		if d.Name != "" {
			out = append(out, snapshot.DaemonSet{Name: d.Name, NodeSelector: d.Spec.Template.Spec.NodeSelector, Affinity: d.Spec.Template.Spec.Affinity})
		}
	}
	if len(out) != 16 {
		t.Fatalf("read %d DaemonSets from the fixture, want 16", len(out))
	}
	return out
}

type row struct {
	name, daemonSet, column string
	variants                []string
}

func rows(roster []operand.Operand) []row {
	out := make([]row, len(roster))
	for i, o := range roster {
		out[i] = row{o.Name, o.DaemonSet, o.Column, o.Variants}
	}
	return out
}

func TestRosterOfARealInstall(t *testing.T) {
	got := rows(discover.Roster(realInstall(t)))
	want := []row{
		{"driver", "nvidia-driver-daemonset", "driver", []string{
			"nvidia-driver-daemonset-5.15.0-105-generic-ubuntu22.04",
			"nvidia-driver-daemonset-6.8.0-40-generic-ubuntu24.04",
			"nvidia-gpu-driver-rhel9.4-7d9c8b6f5d",
		}},
		{"container-toolkit", "nvidia-container-toolkit-daemonset", "toolkit", nil},
		{"device-plugin", "nvidia-device-plugin-daemonset", "device-plugin", nil}, // not the MPS control daemon
		{"gpu-feature-discovery", "gpu-feature-discovery", "gfd", nil},
		{"dcgm-exporter", "nvidia-dcgm-exporter", "dcgm", nil},
		{"operator-validator", "nvidia-operator-validator", "validator", nil},
		{"dcgm", "nvidia-dcgm", "dcgm-hostengine", nil},
		{"mig-manager", "nvidia-mig-manager", "mig-manager", nil},
		{"node-status-exporter", "nvidia-node-status-exporter", "node-status", nil},
		{"sandbox-validator", "nvidia-sandbox-validator", "sandbox-validator", nil},
		{"vfio-manager", "nvidia-vfio-manager", "vfio-manager", nil},
		{"sandbox-device-plugin", "nvidia-sandbox-device-plugin-daemonset", "sandbox-device-plugin", nil},
		{"dra-driver", "nvidia-dra-driver-kubelet-plugin", "dra-driver", nil}, // known: in catalog order
	}
	if !slices.EqualFunc(got, want, func(a, b row) bool {
		return a.name == b.name && a.daemonSet == b.daemonSet && a.column == b.column && slices.Equal(a.variants, b.variants)
	}) {
		t.Errorf("roster:\n%+v\nwant:\n%+v", got, want)
	}
}

// On the lab's own cluster --discover finds exactly the lab's roster, so every
// output stays the same.
func TestRosterOfTheLab(t *testing.T) {
	var dss []snapshot.DaemonSet
	for _, o := range operand.Lab {
		dss = append(dss, snapshot.DaemonSet{Name: o.DaemonSet, NodeSelector: map[string]string{o.LabelKey(): "true"}})
	}
	got := discover.Roster(dss)
	if !slices.EqualFunc(got, operand.Lab, func(a, b operand.Operand) bool {
		return a.Name == b.Name && a.DaemonSet == b.DaemonSet && a.Column == b.Column && len(a.Variants) == 0
	}) {
		t.Errorf("roster %+v, want the lab's", got)
	}
	// With no DaemonSet at all the lab's five are still judged (and reported missing).
	if got := discover.Roster(nil); len(got) != len(operand.Lab) {
		t.Errorf("roster of an empty namespace: %+v, want the lab's five", got)
	}
}

func TestRosterKeys(t *testing.T) {
	byAffinity := snapshot.DaemonSet{Name: "x-affinity", Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: operand.LabelPrefix + "fabric-manager", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}}},
		}}},
	}}}
	operandsOnly := snapshot.DaemonSet{Name: "x-operands", NodeSelector: map[string]string{operand.OperandsLabel: "true"}}
	client := snapshot.DaemonSet{Name: "x-client", NodeSelector: map[string]string{operand.LabelPrefix + "client": "true"}}
	nvsm := snapshot.DaemonSet{Name: "x-nvsm", NodeSelector: map[string]string{operand.LabelPrefix + "nvsm": "true"}}
	unrelated := snapshot.DaemonSet{Name: "kube-proxy", NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}
	clash := snapshot.DaemonSet{Name: "x-validator", NodeSelector: map[string]string{operand.LabelPrefix + "validator": "true"}}

	got := discover.Roster([]snapshot.DaemonSet{byAffinity, operandsOnly, client, nvsm, unrelated, clash})
	extra := rows(got[len(operand.Lab):])
	want := []row{
		{"fabric-manager", "x-affinity", "fabric-manager", nil},
		{"validator", "x-validator", "validator", nil},
	}
	if !slices.EqualFunc(extra, want, func(a, b row) bool {
		return a.name == b.name && a.daemonSet == b.daemonSet && a.column == b.column
	}) {
		t.Errorf("extra operands %+v, want %+v", extra, want)
	}
	// "validator" is free as a column here: operator-validator was not found.
	got = discover.Roster([]snapshot.DaemonSet{clash, {Name: "nvidia-operator-validator", NodeSelector: map[string]string{operand.LabelPrefix + "operator-validator": "true"}}})
	if c := got[len(got)-1]; c.Name != "validator" || c.Column != operand.LabelPrefix+"validator" {
		t.Errorf("a name that is another operand's column: %+v, want the full label key as column", c)
	}
}
