package render

import (
	"bytes"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/operand"
)

// spec is the operand table of docs/lab.md, copied by hand: the test compares
// the rendered manifests with it, not with the catalog they came from.
var spec = []struct {
	operand, labelKey, daemonSet, file, image, memory string
}{
	{"driver", "nvidia.com/gpu.deploy.driver", "nvidia-driver-daemonset", "driver-ds.yaml", "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04", "512Mi"},
	{"container-toolkit", "nvidia.com/gpu.deploy.container-toolkit", "nvidia-container-toolkit-daemonset", "toolkit-ds.yaml", "nvcr.io/nvidia/k8s/container-toolkit:v1.16.2", "128Mi"},
	{"device-plugin", "nvidia.com/gpu.deploy.device-plugin", "nvidia-device-plugin-daemonset", "device-plugin-ds.yaml", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", "128Mi"},
	{"gpu-feature-discovery", "nvidia.com/gpu.deploy.gpu-feature-discovery", "gpu-feature-discovery", "gfd-ds.yaml", "nvcr.io/nvidia/k8s-device-plugin:v0.16.2", "128Mi"},
	{"dcgm-exporter", "nvidia.com/gpu.deploy.dcgm-exporter", "nvidia-dcgm-exporter", "dcgm-ds.yaml", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04", "128Mi"},
}

func TestOperandsMatchSpec(t *testing.T) {
	manifests, err := Operands(gpuops.Kustomize, operand.Lab, "gpu-operator")
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != len(spec) {
		t.Fatalf("rendered %d manifests, docs/lab.md lists %d operands", len(manifests), len(spec))
	}
	for i, want := range spec {
		m := manifests[i]
		t.Run(want.operand, func(t *testing.T) {
			if m.Operand.Name != want.operand || m.Operand.LabelKey() != want.labelKey || m.Operand.Manifest != want.file {
				t.Errorf("catalog entry %d = %s %s %s, docs/lab.md says %s %s %s", i,
					m.Operand.Name, m.Operand.LabelKey(), m.Operand.Manifest, want.operand, want.labelKey, want.file)
			}
			// Strict typed decoding: an unquoted `true` in the nodeSelector
			// (a YAML boolean) would fail here, as the API server rejects it.
			var ds appsv1.DaemonSet
			if err := yaml.UnmarshalStrict(m.YAML, &ds); err != nil {
				t.Fatalf("manifest does not decode as a DaemonSet: %v\n%s", err, m.YAML)
			}
			if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" {
				t.Errorf("kind %s %s, want apps/v1 DaemonSet", ds.APIVersion, ds.Kind)
			}
			if ds.Name != want.daemonSet || ds.Namespace != "gpu-operator" {
				t.Errorf("name %s/%s, want gpu-operator/%s", ds.Namespace, ds.Name, want.daemonSet)
			}
			app := map[string]string{"app": want.daemonSet}
			if ds.Spec.Selector == nil || !maps.Equal(ds.Spec.Selector.MatchLabels, app) || len(ds.Spec.Selector.MatchExpressions) > 0 {
				t.Errorf("selector %v, want matchLabels %v", ds.Spec.Selector, app)
			}
			if !maps.Equal(ds.Spec.Template.Labels, app) {
				t.Errorf("pod labels %v, want %v", ds.Spec.Template.Labels, app)
			}
			if sel := ds.Spec.Template.Spec.NodeSelector; !maps.Equal(sel, map[string]string{want.labelKey: "true"}) {
				t.Errorf("nodeSelector %v, want {%s: \"true\"}", sel, want.labelKey)
			}
			if !bytes.Contains(m.YAML, []byte(want.labelKey+`: "true"`)) {
				t.Errorf("the nodeSelector value is not written as the quoted string \"true\":\n%s", m.YAML)
			}
			cs := ds.Spec.Template.Spec.Containers
			if len(cs) != 1 {
				t.Fatalf("%d containers, want 1", len(cs))
			}
			if cs[0].Image != want.image {
				t.Errorf("image %s, want %s", cs[0].Image, want.image)
			}
			if mem := cs[0].Resources.Requests.Memory(); mem.String() != want.memory {
				t.Errorf("memory request %s, want %s", mem, want.memory)
			}
		})
	}
}

func TestOperandsInAnotherNamespace(t *testing.T) {
	manifests, err := Operands(gpuops.Kustomize, operand.Lab, "lab-x")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		var ds appsv1.DaemonSet
		if err := yaml.Unmarshal(m.YAML, &ds); err != nil || ds.Namespace != "lab-x" {
			t.Errorf("%s: namespace %q (%v), want lab-x", m.Operand.Name, ds.Namespace, err)
		}
	}
}
