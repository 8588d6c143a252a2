package health_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The kubelet's words, as it writes them (kubernetes v1.37.2
// pkg/kubelet/kubelet.go rejectPod, pkg/kubelet/cm/admission/errors.go,
// pkg/kubelet/kuberuntime/kuberuntime_manager.go) around containerd's
// (NVIDIA/gpu-operator#730).
const (
	refusedMessage = "Pod was rejected: Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"
	noRuntimeEvent = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured`
)

// kubelet is what the kubelet reports of a scenario's node besides its
// pods' states: the validator's workload pod it refused a GPU (and how
// long ago), the GPUs
// that users' pods (in a namespace of their own) request there, the
// operands whose pods it could not give a sandbox, and the note the node's
// verdict carries.
type kubelet struct {
	refused   bool
	refusedAt time.Duration // ago; 0: as the test makes it
	held      int64
	noRuntime []string
	note      string
}

// report makes the kubelet's reports on node, whose operands' pods are in
// the states given: a refused workload pod held Failed by
// hack/kwokctl.yaml's rejected stage, users' pods bound to the node, and
// Warning Events written as the kubelet records them.
func (k kubelet) report(t *testing.T, env *testcluster.Env, node string, states map[string]string) {
	t.Helper()
	ctx := context.Background()
	if k.refused {
		spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
			InitContainers: []corev1.Container{{Name: "plugin-validation", Image: "registry.example/fake:1", Resources: testcluster.GPUs(1)}},
			Containers:     []corev1.Container{{Name: "nvidia-device-plugin-validator", Image: "registry.example/fake:1"}}}
		var at time.Time
		if k.refusedAt > 0 {
			at = time.Now().Add(-k.refusedAt)
		}
		p, err := env.Client.CoreV1().Pods(env.Namespace).Create(ctx,
			testcluster.Rejected(snapshot.PluginWorkloadPrefix, node, snapshot.UnexpectedAdmissionError, refusedMessage, at, spec), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitRefused(t, env, p.Name)
	}
	if k.held > 0 {
		users := env.OtherNamespace(t, "users")
		for i, n := range []int64{k.held / 2, k.held - k.held/2} {
			if _, err := env.Client.CoreV1().Pods(users).Create(ctx, testcluster.GPUPod(fmt.Sprintf("train-%s-%d", node, i), node, n), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(k.noRuntime) == 0 {
		return
	}
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	sandboxless := map[string]bool{} // by DaemonSet
	for _, name := range k.noRuntime {
		o, err := operand.Lookup(operand.Real, name)
		if err != nil {
			t.Fatal(err)
		}
		sandboxless[variant(o, states[name])] = true
	}
	made := 0
	for _, p := range pods.Items {
		if !sandboxless[snapshot.PodFrom(&p).DaemonSet] {
			continue
		}
		made++
		env.Warning(t, &p, node, snapshot.FailedCreatePodSandBox, noRuntimeEvent, 12, at)
	}
	if made != len(k.noRuntime) {
		t.Fatalf("%d sandbox Events on %s, want one a pod of %v", made, node, k.noRuntime)
	}
}

// waitRefused waits until the pod named reads as refused a device.
func waitRefused(t *testing.T, env *testcluster.Env, name string) {
	t.Helper()
	env.WaitForPods(t, env.Namespace, func(pods []corev1.Pod) bool {
		for i := range pods {
			if pods[i].Name == name {
				_, ok := snapshot.PodFrom(&pods[i]).RefusedDevice()
				return ok
			}
		}
		return false
	})
}

// noteCodes are a verdict's notes' codes, joined.
func noteCodes(v health.Node) string {
	var out []string
	for _, n := range v.Notes {
		out = append(out, n.Code)
	}
	return strings.Join(out, ",")
}
