package realcluster_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
)

const (
	kernelLabel = "feature.node.kubernetes.io/kernel-version.full"
	deploy      = "nvidia.com/gpu.deploy."
)

// The DaemonSets of a real GPU Operator install (pkg/discover/testdata) on the
// lab control plane, with nodes like a real fleet's: precompiled drivers per
// kernel, an NVIDIADriver pool, a host driver, a VM-passthrough node and a
// node whose kernel no driver DaemonSet serves.
func TestRealInstall(t *testing.T) {
	env := testcluster.New(t)
	fixture, err := os.ReadFile("../../pkg/discover/testdata/gpu-operator.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gpuTaint := testcluster.WithTaints(corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule})
	container := func(driver string, extra ...string) map[string]string {
		l := map[string]string{"nvidia.com/gpu.present": "true", deploy + "driver": driver}
		for _, o := range []string{"container-toolkit", "device-plugin", "gpu-feature-discovery", "dcgm", "dcgm-exporter", "operator-validator", "node-status-exporter"} {
			l[deploy+o] = "true"
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	nodes := map[string]map[string]string{
		"u22": container("true", kernelLabel, "5.15.0-105-generic"),
		"u24": container("true", kernelLabel, "6.8.0-40-generic", deploy+"mig-manager", "true", "nvidia.com/mps.capable", "true"),
		"rhel": container("true", "nvidia.com/gpu-operator.driver.owner", "rhel-pool",
			"feature.node.kubernetes.io/system-os_release.ID", "rhel", "feature.node.kubernetes.io/system-os_release.VERSION_ID", "9.4"),
		"host":   container("pre-installed", kernelLabel, "5.14.0-427.el9"),
		"vm":     {deploy + "sandbox-validator": "true", deploy + "sandbox-device-plugin": "true", deploy + "vfio-manager": "true"},
		"broken": {kernelLabel: "6.1.0-18-amd64", deploy + "driver": "true", deploy + "container-toolkit": "true"},
	}
	name := map[string]string{}
	for short, labels := range nodes {
		name[short] = env.NodeName(short)
		env.AddNode(t, name[short], labels, gpuTaint)
	}
	create(t, env, fixture)
	// 8 operand pods on u22, rhel; 10 on u24 (MIG manager, MPS daemon); 7 on host; 3 on vm; 1 on broken.
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 37
	})
	sel := selector(env)
	operands := gpuopstest.On(env)

	t.Run("matrix", func(t *testing.T) {
		columns := []string{"driver", "toolkit", "device-plugin", "gfd", "dcgm", "validator", "dcgm-hostengine", "mig-manager",
			"node-status", "sandbox-validator", "vfio-manager", "sandbox-device-plugin", "dra-driver"}
		stack := []string{"toolkit", "device-plugin", "gfd", "dcgm", "validator", "dcgm-hostengine", "node-status"}
		yes := map[string][]string{
			"broken": {"toolkit"},
			"host":   stack,
			"rhel":   append([]string{"driver"}, stack...),
			"u22":    append([]string{"driver"}, stack...),
			"u24":    append([]string{"driver", "mig-manager"}, stack...),
			"vm":     {"sandbox-validator", "vfio-manager", "sandbox-device-plugin"},
		}
		var want strings.Builder
		for _, short := range []string{"broken", "host", "rhel", "u22", "u24", "vm"} {
			want.WriteString(name[short])
			for _, c := range columns {
				fmt.Fprintf(&want, " %s=%s", c, map[bool]string{true: "yes", false: "no"}[slices.Contains(yes[short], c)])
			}
			want.WriteByte('\n')
		}
		want.WriteString("TOTAL_PODS=37\n")
		r := operands.Run(t, "matrix", "--discover", "-l", sel)
		if r.Code != 0 || r.Stdout != want.String() {
			t.Errorf("matrix --discover: exit %d\n%s%s\nwant:\n%s", r.Code, r.Stdout, r.Stderr, want.String())
		}
		// Without --discover only the lab's five are known: no precompiled driver counts.
		r = operands.Run(t, "matrix", "-l", sel)
		if !strings.Contains(r.Stdout, name["u22"]+" driver=no toolkit=yes") {
			t.Errorf("matrix: %s", r.Stdout)
		}
	})

	t.Run("audit", func(t *testing.T) {
		r := operands.Run(t, "audit", "--discover", "--explain", "-l", sel)
		want := []string{
			name["broken"] + " MISSING driver (" +
				"DaemonSet nvidia-driver-daemonset-5.15.0-105-generic-ubuntu22.04 selects " + kernelLabel + "=5.15.0-105-generic; the node has " + kernelLabel + "=6.1.0-18-amd64; " +
				"DaemonSet nvidia-driver-daemonset-6.8.0-40-generic-ubuntu24.04 selects " + kernelLabel + "=6.8.0-40-generic; the node has " + kernelLabel + "=6.1.0-18-amd64; " +
				"DaemonSet nvidia-gpu-driver-rhel9.4-7d9c8b6f5d selects feature.node.kubernetes.io/system-os_release.ID=rhel; the node has no label feature.node.kubernetes.io/system-os_release.ID)",
			name["host"] + " OK",
			name["host"] + " WARNING nvidia.com/gpu.deploy.driver (label is 'pre-installed': the host provides this, so the DaemonSet will not run here)",
			name["rhel"] + " OK", name["u22"] + " OK", name["u24"] + " OK", name["vm"] + " OK",
		}
		if got := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n"); r.Code != 1 || !slices.Equal(got, want) {
			t.Errorf("audit --discover --explain: exit %d\n%s%s\nwant exit 1:\n%s", r.Code, r.Stdout, r.Stderr, strings.Join(want, "\n"))
		}
	})

	t.Run("order-check", func(t *testing.T) {
		for short, want := range map[string]string{"broken": "toolkit-without-driver", "host": "ok", "u22": "ok", "u24": "ok", "rhel": "ok", "vm": "ok"} {
			r := operands.Run(t, "order-check", "--all-rules", "--discover", name[short])
			if r.Stdout != want+"\n" || (r.Code == 0) != (want == "ok") {
				t.Errorf("order-check --all-rules --discover %s: exit %d %q %q, want %q", short, r.Code, r.Stdout, r.Stderr, want)
			}
		}
	})
}
