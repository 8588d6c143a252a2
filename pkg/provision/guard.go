package provision

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/settle"
)

const (
	policyObject  = "validatingadmissionpolicy.admissionregistration.k8s.io/" + guard.Name
	bindingObject = "validatingadmissionpolicybinding.admissionregistration.k8s.io/" + guard.Name
)

// InstallGuard applies the rendered guard with server-side apply as gpuops,
// policy first, then waits until the API server enforces it: a server-side
// dry run of a Node that breaks the first rule comes back refused (deny) or
// with the policy's warning (warn). Another manager's policy of the same
// name is refused unless opts.Force.
func InstallGuard(ctx context.Context, cfg *rest.Config, objs *guard.Objects, opts Options) error {
	probe := &warnings{}
	pcfg := rest.CopyConfig(cfg)
	pcfg.WarningHandler = probe
	c, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return err
	}
	vap := c.AdmissionregistrationV1()
	applyPolicy := func(o metav1.ApplyOptions) (string, error) {
		p, err := vap.ValidatingAdmissionPolicies().Patch(ctx, guard.Name, types.ApplyYAMLPatchType, objs.PolicyYAML, o.ToPatchOptions())
		if err != nil {
			return "", err
		}
		return p.ResourceVersion, nil
	}
	applyBinding := func(o metav1.ApplyOptions) (string, error) {
		b, err := vap.ValidatingAdmissionPolicyBindings().Patch(ctx, guard.Name, types.ApplyYAMLPatchType, objs.BindingYAML, o.ToPatchOptions())
		if err != nil {
			return "", err
		}
		return b.ResourceVersion, nil
	}
	// Both are checked before either is written.
	before := map[string]string{}
	for _, a := range []struct {
		object string
		get    func() (metav1.Object, error)
		apply  func(metav1.ApplyOptions) (string, error)
	}{
		{policyObject, func() (metav1.Object, error) {
			return vap.ValidatingAdmissionPolicies().Get(ctx, guard.Name, metav1.GetOptions{})
		}, applyPolicy},
		{bindingObject, func() (metav1.Object, error) {
			return vap.ValidatingAdmissionPolicyBindings().Get(ctx, guard.Name, metav1.GetOptions{})
		}, applyBinding},
	} {
		obj, err := a.get()
		switch {
		case notFound(err):
		case err != nil:
			return fmt.Errorf("read %s: %w", a.object, err)
		default:
			before[a.object] = obj.GetResourceVersion()
			if others := otherManagers(obj.GetManagedFields()); len(others) > 0 && !opts.Force {
				return &ForeignOwnerError{Object: a.object, Detail: fmt.Sprintf("also managed by %q", others)}
			}
		}
		if _, err := a.apply(dryRun(applyOptions(opts.Force))); err != nil {
			return fmt.Errorf("%s: %w", a.object, err)
		}
	}
	for _, a := range []struct {
		object string
		apply  func(metav1.ApplyOptions) (string, error)
	}{{policyObject, applyPolicy}, {bindingObject, applyBinding}} {
		rv, err := a.apply(applyOptions(opts.Force))
		if err != nil {
			return fmt.Errorf("apply %s: %w", a.object, err)
		}
		old, existed := before[a.object]
		verb := "created"
		if existed {
			verb = change(old, rv, "configured")
		}
		opts.logf("%s %s", a.object, verb)
	}
	return waitEnforced(ctx, c, probe, objs, opts)
}

// waitEnforced probes until the API server applies the new policy: its
// admission plugin learns of policies from a watch, a moment after they are
// written. There is nothing to watch for that moment, so it asks again
// every 200ms.
func waitEnforced(ctx context.Context, c kubernetes.Interface, probe *warnings, objs *guard.Objects, opts Options) error {
	mode := guard.ModeOf(objs.Binding.Spec.ValidationActions)
	if me, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		if exempt, _ := guard.Exempt(objs.Policy.Spec.MatchConditions); slices.Contains(exempt, me.Status.UserInfo.Username) {
			opts.logf("guard: not probed: you (%s) are exempt from it", me.Status.UserInfo.Username)
			return nil
		}
	}
	r := operand.AllRules[0]
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   "gpuops-guard-probe",
		Labels: map[string]string{operand.LabelPrefix + r.Operand: "true"},
	}}
	timeout := opts.settle().Timeout
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		probe.reset()
		_, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case mode == guard.Deny && err != nil && strings.Contains(err.Error(), guard.Name):
			return true, nil
		case mode == guard.Warn && err == nil && probe.contains(guard.Name):
			return true, nil
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return false, fmt.Errorf("probe the guard with a dry-run Node: %w", err)
		}
		return false, nil // not enforced yet, or the server is busy: ask again
	})
	switch {
	case err == nil:
		opts.logf("guard: enforced, mode %s", mode)
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w while waiting for the API server to enforce the guard", settle.ErrInterrupted)
	case !wait.Interrupted(err):
		return err
	}
	return fmt.Errorf("the API server does not enforce %s after %s", guard.Name, timeout)
}

// warnings collects the API server's warnings of the requests of one client.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = nil
}

func (w *warnings) contains(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.seen, func(t string) bool { return strings.Contains(t, s) })
}

// Guard reads the guard's policy and binding, nil where missing.
func Guard(ctx context.Context, c kubernetes.Interface) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	vap := c.AdmissionregistrationV1()
	p, err := vap.ValidatingAdmissionPolicies().Get(ctx, guard.Name, metav1.GetOptions{})
	if notFound(err) {
		p, err = nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", policyObject, err)
	}
	b, err := vap.ValidatingAdmissionPolicyBindings().Get(ctx, guard.Name, metav1.GetOptions{})
	if notFound(err) {
		b, err = nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", bindingObject, err)
	}
	return p, b, nil
}

// UninstallGuard deletes the binding, then the policy, if gpuops applied
// them (or with opts.Force, whoever did). Nothing installed is no error.
func UninstallGuard(ctx context.Context, c kubernetes.Interface, opts Options) error {
	p, b, err := Guard(ctx, c)
	if err != nil {
		return err
	}
	if p == nil && b == nil {
		opts.logf("guard: not installed")
		return nil
	}
	if !opts.Force {
		if p != nil && !appliedByGPUOps(p) {
			return fmt.Errorf("%s was not installed by gpuops; not deleted (--force deletes it)", policyObject)
		}
		if b != nil && !appliedByGPUOps(b) {
			return fmt.Errorf("%s was not installed by gpuops; not deleted (--force deletes it)", bindingObject)
		}
	}
	return deleteGuard(ctx, c, p, b, opts)
}

// deleteGuard deletes what exists of the two, binding first, each the very
// object read (UID precondition).
func deleteGuard(ctx context.Context, c kubernetes.Interface, p *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding, opts Options) error {
	vap := c.AdmissionregistrationV1()
	if b != nil {
		err := vap.ValidatingAdmissionPolicyBindings().Delete(ctx, guard.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &b.UID}})
		if err != nil && !notFound(err) {
			return fmt.Errorf("delete %s: %w", bindingObject, err)
		}
		opts.logf("%s deleted", bindingObject)
	}
	if p != nil {
		err := vap.ValidatingAdmissionPolicies().Delete(ctx, guard.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !notFound(err) {
			return fmt.Errorf("delete %s: %w", policyObject, err)
		}
		opts.logf("%s deleted", policyObject)
	}
	return nil
}

// appliedByGPUOps reports whether gpuops's field manager shaped the object.
func appliedByGPUOps(o metav1.Object) bool {
	return slices.ContainsFunc(o.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == FieldManager && e.Subresource == ""
	})
}

// DryRunGuard sends the rendered guard with server-side dry run, so the API
// server validates and type-checks it, and prints what it would apply.
func DryRunGuard(ctx context.Context, c kubernetes.Interface, objs *guard.Objects, w io.Writer) error {
	vap := c.AdmissionregistrationV1()
	o := dryRun(applyOptions(false)).ToPatchOptions()
	if _, err := vap.ValidatingAdmissionPolicies().Patch(ctx, guard.Name, types.ApplyYAMLPatchType, objs.PolicyYAML, o); err != nil {
		return fmt.Errorf("%s: %w", policyObject, err)
	}
	if _, err := vap.ValidatingAdmissionPolicyBindings().Patch(ctx, guard.Name, types.ApplyYAMLPatchType, objs.BindingYAML, o); err != nil {
		return fmt.Errorf("%s: %w", bindingObject, err)
	}
	_, err := fmt.Fprintf(w, "%s---\n%s", objs.PolicyYAML, objs.BindingYAML)
	return err
}
