package labspec_test

import (
	"strings"
	"testing"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
)

// The embedded default must be the lab's step 1 exactly (docs/lab.md).
func TestDefaultLabIsSpecStep1(t *testing.T) {
	lab, err := labspec.Parse(gpuops.DefaultLab, operand.Lab)
	if err != nil {
		t.Fatal(err)
	}
	if lab.Namespace != "gpu-operator" || len(lab.Nodes) != 3 {
		t.Fatalf("namespace %q with %d nodes, want gpu-operator with 3", lab.Namespace, len(lab.Nodes))
	}
	gpu := map[string]string{
		"feature.node.kubernetes.io/pci-10de.present": "true",
		"nvidia.com/gpu.present":                      "true",
	}
	all := func(driver string) map[string]string {
		m := map[string]string{
			"nvidia.com/gpu.deploy.driver":                "true",
			"nvidia.com/gpu.deploy.container-toolkit":     "true",
			"nvidia.com/gpu.deploy.device-plugin":         "true",
			"nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
			"nvidia.com/gpu.deploy.dcgm-exporter":         "true",
		}
		m["nvidia.com/gpu.deploy.driver"] = driver
		for k, v := range gpu {
			m[k] = v
		}
		return m
	}
	want := []map[string]string{all("true"), all("false"), {}}
	gpus := []int64{8, 8, 0} // the third node has no GPU: its fake node advertises none
	for i, n := range lab.Nodes {
		if n.GPUs != gpus[i] {
			t.Errorf("node %s: %d GPUs, want %d", n.Name, n.GPUs, gpus[i])
		}
		got := n.NodeLabels(operand.Lab)
		if len(got) != len(want[i]) {
			t.Errorf("node %s: labels %v, want %v", n.Name, got, want[i])
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("node %s: %s=%q, want %q", n.Name, k, got[k], v)
			}
		}
	}
	if lab.OptOut == nil || lab.OptOut.Operand != "dcgm-exporter" || lab.OptOut.Node != lab.Nodes[1].Name {
		t.Errorf("optout = %+v, want dcgm-exporter on the second node", lab.OptOut)
	}
	if lab.OptIn == nil || lab.OptIn.Operand != "device-plugin" || lab.OptIn.Node != lab.Nodes[2].Name {
		t.Errorf("optin = %+v, want device-plugin on the third node", lab.OptIn)
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string]struct{ spec, want string }{
		"not yaml":          {"nodes: [", "invalid lab spec"},
		"unknown field":     {"namespace: x\nnodez: []", "unknown field"},
		"bad namespace":     {"namespace: Bad_NS\nnodes: [{name: a}]", "namespace"},
		"no nodes":          {"namespace: x", "no nodes"},
		"duplicate node":    {"namespace: x\nnodes: [{name: a}, {name: a}]", `node "a" is listed twice`},
		"invalid node name": {"namespace: x\nnodes: [{name: 'A B'}]", "node name"},
		"unknown operand":   {"namespace: x\nnodes: [{name: a, operands: {gpu-driver: true}}]", `unknown operand "gpu-driver"`},
		"non-boolean value": {"namespace: x\nnodes: [{name: a, operands: {driver: maybe}}]", "invalid lab spec"},
		"string boolean":    {"namespace: x\nnodes: [{name: a, operands: {driver: \"true\"}}]", "invalid lab spec"},
		"deploy in labels":  {"namespace: x\nnodes: [{name: a, labels: {nvidia.com/gpu.deploy.driver: 'true'}}]", "set deploy labels under operands"},
		"bad label value":   {"namespace: x\nnodes: [{name: a, labels: {k: 'a b'}}]", "label k value"},
		"negative gpus":     {"namespace: x\nnodes: [{name: a, gpus: -1}]", "gpus -1"},
		"gpus not a count":  {"namespace: x\nnodes: [{name: a, gpus: many}]", "invalid lab spec"},
		"optout stranger":   {"namespace: x\nnodes: [{name: a}]\noptout: {node: b, operand: driver}", `optout: node "b"`},
		"optin bad operand": {"namespace: x\nnodes: [{name: a}]\noptin: {node: a, operand: mig}", `optin: unknown operand "mig"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := labspec.Parse([]byte(c.spec), operand.Lab)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse() error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
