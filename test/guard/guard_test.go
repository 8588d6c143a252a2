package guard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuops/gpuops/internal/gpuopstest"
	"github.com/gpuops/gpuops/internal/testcluster"
	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/operand"
)

const (
	policy  = "validatingadmissionpolicy.admissionregistration.k8s.io/gpuops-guard"
	binding = "validatingadmissionpolicybinding.admissionregistration.k8s.io/gpuops-guard"
)

var (
	pluginKey  = operand.LabelPrefix + operand.DevicePlugin
	toolkitKey = operand.LabelPrefix + operand.ContainerToolkit
	gfdKey     = operand.LabelPrefix + operand.GPUFeatureDiscovery
	// what the API server says when the guard refuses a device plugin without the toolkit
	denied = "ValidatingAdmissionPolicy 'gpuops-guard' with binding 'gpuops-guard' denied request: " + guard.Message(operand.DeviceRule)
)

func uninstallAtEnd(t *testing.T, env *testcluster.Env) {
	t.Cleanup(func() { gpuopstest.On(env).Run(t, "guard", "uninstall", "--force") })
}

// The guard as the API server applies it to kubectl: refused, exempt,
// mended, kept, paused, in order, warned, gone.
func TestGuard(t *testing.T) {
	env := testcluster.New(t)
	n := lab(t, env, map[string][]string{
		"full":   fullStack,
		"pair":   {operand.Driver, operand.ContainerToolkit, operand.DevicePlugin},
		"broken": {operand.DevicePlugin},
	})
	full, pair, broken := n["full"], n["pair"], n["broken"]
	label := func(node string, args ...string) func(as ...string) gpuopstest.Output {
		return func(as ...string) gpuopstest.Output {
			return gpuopstest.On(env).Kubectl(t, append(append(as, "label", "--overwrite", "node", node), args...)...)
		}
	}

	st := gpuopstest.On(env).Want(t, 0, "guard", "status")
	if !strings.HasPrefix(st.Stdout, "guard: not installed\n") || !strings.Contains(st.Stdout, "\n"+broken+" device-plugin-without-toolkit\n") ||
		strings.Contains(st.Stdout, full) {
		t.Errorf("status before install:\n%s", st.Stdout)
	}

	uninstallAtEnd(t, env)
	r := gpuopstest.On(env).Want(t, 0, "guard", "install")
	if want := policy + " created\n" + binding + " created\nguard: enforced, mode deny\n"; r.Stdout != want {
		t.Errorf("install: %q, want %q", r.Stdout, want)
	}
	typeChecked(t, env)
	st = gpuopstest.On(env).Want(t, 0, "guard", "status")
	wantStatus := "guard: installed, mode deny\nrules: the same as this gpuops's\nexempt: " +
		strings.Join(guard.DefaultExempt(env.Namespace), ", ") + "\nnodes breaking a rule now: "
	if !strings.HasPrefix(st.Stdout, wantStatus) || !strings.Contains(st.Stdout, "\n"+broken+" device-plugin-without-toolkit\n") {
		t.Errorf("status:\n%s\nwant it to start\n%s", st.Stdout, wantStatus)
	}

	// The device plugin's toolkit taken away by hand: refused, nothing changed.
	before := stateOf(t, env)
	r = label(full, toolkitKey+"=false")()
	if r.Code != 1 || !strings.Contains(r.Stderr, denied) {
		t.Errorf("kubectl label %s %s=false: exit %d, stderr %q; want the guard's refusal %q", full, toolkitKey, r.Code, r.Stderr, denied)
	}
	sameState(t, "the refused kubectl label", before, stateOf(t, env))
	// A Node created broken is refused too.
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.NodeName("new"), Labels: deploy(operand.DevicePlugin)}}
	if _, err := env.Client.CoreV1().Nodes().Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), denied) {
		t.Errorf("creating a node with only the device plugin: %v, want the guard's refusal", err)
	}

	// The operator's own service account may (RBAC permitting); whoever
	// mends the node may too.
	operator := "system:serviceaccount:" + env.Namespace + ":gpu-operator"
	mayLabelNodes(t, env, operator)
	ok(t, "as the operator", label(full, toolkitKey+"=false")("--as="+operator))
	ok(t, "mending", label(full, toolkitKey+"=true")())
	// A node broken before keeps its break through other changes, but gets no new one.
	ok(t, "an unrelated label on a broken node", label(broken, "gpuops.test/other=x")())
	if r := label(broken, gfdKey+"=true")(); r.Code != 1 || !strings.Contains(r.Stderr, guard.Message(operand.AllRules[1])) {
		t.Errorf("a second break on a broken node: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// The operator's helpers pause labels: never refused.
	ok(t, "paused toolkit", label(full, toolkitKey+"=paused-for-driver-upgrade")())
	ok(t, "toolkit back", label(full, toolkitKey+"=true")())
	// In order, the same end state passes: the device plugin first, then the toolkit.
	ok(t, "device plugin out", gpuopstest.On(env).Kubectl(t, "label", "node", pair, pluginKey+"-"))
	ok(t, "then the toolkit", label(pair, toolkitKey+"=false")())

	// gpuops's own forced change meets the guard too, before any write.
	settled(t, env)
	before = stateOf(t, env)
	r = gpuopstest.On(env).Run(t, "optout", full, operand.ContainerToolkit, "--force")
	if r.Code != 2 || !strings.Contains(r.Stderr, denied) || !strings.HasPrefix(r.Stderr, "warning: ") {
		t.Errorf("optout --force under the guard: exit %d, stderr %q; want the plan's warning, then the guard's refusal", r.Code, r.Stderr)
	}
	sameState(t, "optout --force under the guard", before, stateOf(t, env))

	// Warn mode: kubectl shows the warning and the change goes through.
	r = gpuopstest.On(env).Want(t, 0, "guard", "install", "--mode", "warn")
	// (the policy itself reads "configured" when the API server has since
	// added its status writer's entry to the ownership record)
	if want := binding + " configured\nguard: enforced, mode warn\n"; !strings.HasPrefix(r.Stdout, policy+" ") || !strings.HasSuffix(r.Stdout, want) {
		t.Errorf("install --mode warn: %q, want it to end %q", r.Stdout, want)
	}
	r = ok(t, "label under warn", label(full, toolkitKey+"=false")())
	if !strings.Contains(r.Stderr, "Warning: Validation failed for ValidatingAdmissionPolicy 'gpuops-guard' with binding 'gpuops-guard': "+guard.Message(operand.DeviceRule)) {
		t.Errorf("kubectl label under warn: stderr %q", r.Stderr)
	}
	if got := labelsOf(t, env, full)[toolkitKey]; got != "false" {
		t.Errorf("under warn the label is %q, want false", got)
	}

	// Uninstalled: nothing judges any more.
	r = gpuopstest.On(env).Want(t, 0, "guard", "uninstall")
	if want := binding + " deleted\n" + policy + " deleted\n"; r.Stdout != want {
		t.Errorf("uninstall: %q, want %q", r.Stdout, want)
	}
	if r := ok(t, "label, no guard", label(broken, gfdKey+"=true")()); strings.Contains(r.Stderr, "gpuops-guard") {
		t.Errorf("no guard, yet: %s", r.Stderr)
	}
	gpuopstest.On(env).Want(t, 0, "guard", "uninstall")
}

// reset takes away the guard gpuops installed, and only that.
func TestResetRemovesOnlyGPUOpsGuard(t *testing.T) {
	env := testcluster.New(t)
	env.Timeout = 3 * time.Minute
	uninstallAtEnd(t, env)
	gpuopstest.On(env).Want(t, 0, "guard", "install", "--mode", "warn")
	r := gpuopstest.On(env).Want(t, 0, "reset")
	if !strings.HasPrefix(r.Stdout, binding+" deleted\n"+policy+" deleted\n") {
		t.Errorf("reset: %q", r.Stdout)
	}
	if st := gpuopstest.On(env).Want(t, 0, "guard", "status"); !strings.HasPrefix(st.Stdout, "guard: not installed\n") {
		t.Errorf("status after reset: %s", st.Stdout)
	}

	// Someone else's policy of that name stays, and gpuops will not take it over.
	ctx := context.Background()
	vap := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	foreign := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: guard.Name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "true"}},
		},
	}
	if _, err := vap.Create(ctx, foreign, metav1.CreateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	want := "error: " + policy + " was not installed by gpuops; not deleted (--force deletes it)\n"
	if r := gpuopstest.On(env).Run(t, "guard", "uninstall"); r.Code != 2 || r.Stderr != want {
		t.Errorf("uninstall of someone else's policy: exit %d, stderr %q; want %q", r.Code, r.Stderr, want)
	}
	if r := gpuopstest.On(env).Run(t, "guard", "install"); r.Code != 2 || !strings.Contains(r.Stderr, `also managed by ["someone"]`) {
		t.Errorf("install over someone else's policy: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := gpuopstest.On(env).Want(t, 0, "reset"); strings.Contains(r.Stdout, "gpuops-guard") {
		t.Errorf("reset touched someone else's policy: %q", r.Stdout)
	}
	if _, err := vap.Get(ctx, guard.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("someone else's policy: %v", err)
	}
}

// typeChecked waits until the API server has type-checked the policy
// against the Node schema, and fails on any warning it found.
func typeChecked(t *testing.T, env *testcluster.Env) {
	t.Helper()
	lw := cache.NewListWatchFromClient(env.Client.AdmissionregistrationV1().RESTClient(), "validatingadmissionpolicies",
		metav1.NamespaceAll, fields.OneTermEqualSelector("metadata.name", guard.Name))
	got := testcluster.WaitFor(t, env, "the guard's type check", lw, &admissionv1.ValidatingAdmissionPolicy{},
		func(ps []admissionv1.ValidatingAdmissionPolicy) bool {
			return len(ps) == 1 && ps[0].Status.ObservedGeneration == ps[0].Generation && ps[0].Status.TypeChecking != nil
		},
		func(ps []admissionv1.ValidatingAdmissionPolicy) string { return strings.Repeat("policy ", len(ps)) })
	if w := got[0].Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
		t.Errorf("the API server's type check of the guard warns: %+v", w)
	}
}

// mayLabelNodes lets the user patch nodes, until the test ends.
func mayLabelNodes(t *testing.T, env *testcluster.Env, user string) {
	t.Helper()
	ctx := context.Background()
	name := "gpuops-test-label-nodes-" + env.ID
	rbac := env.Client.RbacV1()
	_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}
