package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/settle"
)

const (
	policyObject  = "validatingadmissionpolicy.admissionregistration.k8s.io/" + guard.Name
	bindingObject = "validatingadmissionpolicybinding.admissionregistration.k8s.io/" + guard.Name
)

// guardObject is the policy or its binding, as InstallGuard writes it.
type guardObject struct {
	name  string // as kubectl names it
	get   func(context.Context) (metav1.Object, error)
	apply func(context.Context, metav1.ApplyOptions) (metav1.Object, error)
}

// guardObjects are the policy, then its binding: the binding refers to the policy.
func guardObjects(c kubernetes.Interface, objs *guard.Objects) []guardObject {
	policies, bindings := c.AdmissionregistrationV1().ValidatingAdmissionPolicies(), c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	return []guardObject{
		{policyObject,
			func(ctx context.Context) (metav1.Object, error) {
				return policies.Get(ctx, guard.Name, metav1.GetOptions{})
			},
			func(ctx context.Context, o metav1.ApplyOptions) (metav1.Object, error) {
				return policies.Patch(ctx, guard.Name, types.ApplyYAMLPatchType, objs.PolicyYAML, o.ToPatchOptions())
			}},
		{bindingObject,
			func(ctx context.Context) (metav1.Object, error) {
				return bindings.Get(ctx, guard.Name, metav1.GetOptions{})
			},
			func(ctx context.Context, o metav1.ApplyOptions) (metav1.Object, error) {
				return bindings.Patch(ctx, guard.Name, types.ApplyYAMLPatchType, objs.BindingYAML, o.ToPatchOptions())
			}},
	}
}

// InstallGuard applies the rendered guard with server-side apply as gpuops,
// policy first, then waits until the API server enforces it: a server-side
// dry run of a Node that breaks a rule comes back refused (deny) or with the
// policy's warning (warn). Another manager's policy or binding of that name
// is refused unless opts.Force; both are checked before either is written.
func InstallGuard(ctx context.Context, c kubernetes.Interface, objs *guard.Objects, opts Options) (*guard.Enforcement, error) {
	gos := guardObjects(c, objs)
	before := make([]string, len(gos)) // resourceVersions, "" for none
	for i, g := range gos {
		obj, err := g.get(ctx)
		switch {
		case notFound(err):
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", g.name, err)
		default:
			before[i] = obj.GetResourceVersion()
			if others := otherManagers(obj.GetManagedFields()); len(others) > 0 && !opts.Force {
				return nil, &ForeignOwnerError{Object: g.name, Detail: fmt.Sprintf("also managed by %q", others)}
			}
		}
		if _, err := g.apply(ctx, dryRun(applyOptions(opts.Force))); err != nil {
			return nil, fmt.Errorf("%s: %w", g.name, err)
		}
	}
	for i, g := range gos {
		obj, err := g.apply(ctx, applyOptions(opts.Force))
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", g.name, err)
		}
		verb := "created"
		if before[i] != "" {
			verb = change(before[i], obj.GetResourceVersion(), "configured")
		}
		opts.changed(ObjectChange{Object: g.name, Action: verb})
	}

	mode := guard.ModeOf(objs.Binding.Spec.ValidationActions)
	if me, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err == nil {
		if exempt, _ := guard.Exempt(objs.Policy.Spec.MatchConditions); slices.Contains(exempt, me.Status.UserInfo.Username) {
			return &guard.Enforcement{Mode: mode, Exempt: me.Status.UserInfo.Username}, nil
		}
	}
	err := waitGuard(ctx, c, "enforce", func(refused, warned bool) bool {
		if mode == guard.Deny {
			return refused
		}
		return !refused && warned // a deny binding of before may still speak
	}, opts)
	if err != nil {
		return nil, err
	}
	return &guard.Enforcement{Mode: mode}, nil
}

// DryRunGuard sends the rendered guard with server-side dry run, so that
// the API server validates it; it changes nothing.
func DryRunGuard(ctx context.Context, c kubernetes.Interface, objs *guard.Objects) error {
	for _, g := range guardObjects(c, objs) {
		if _, err := g.apply(ctx, dryRun(applyOptions(false))); err != nil {
			return fmt.Errorf("%s: %w", g.name, err)
		}
	}
	return nil
}

// waitGuard probes until done says the API server's answer is the one
// wanted. Its admission plugin learns of policies from a watch, a moment
// after they are written or deleted; there is nothing to watch for that
// moment, so it asks again every 200ms.
func waitGuard(ctx context.Context, c kubernetes.Interface, what string, done func(refused, warned bool) bool, opts Options) error {
	timeout := opts.settle().Timeout
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		refused, warned, err := probeGuard(ctx, c)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return false, fmt.Errorf("probe the guard with a dry-run Node: %w", err)
		case err != nil:
			return false, nil // the server is busy: ask again
		}
		return done(refused, warned), nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%w while waiting for the API server to %s the guard", settle.ErrInterrupted, what)
	case !wait.Interrupted(err):
		return err
	}
	return fmt.Errorf("the API server does not %s %s after %s", what, guard.Name, timeout)
}

// probeGuard asks the API server to create, in a dry run, a Node whose
// labels break the first rule, and says whether the guard refused it or
// warned about it.
func probeGuard(ctx context.Context, c kubernetes.Interface) (refused, warned bool, err error) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   "gpuops-guard-probe",
		Labels: map[string]string{operand.LabelPrefix + operand.AllRules[0].Operand: "true"},
	}}
	w := &warnings{}
	err = c.CoreV1().RESTClient().Post().Resource("nodes").
		VersionedParams(&metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, scheme.ParameterCodec).
		Body(node).WarningHandler(w).Do(ctx).Error()
	if refusedByPolicy(err) {
		return true, false, nil
	}
	return false, w.said(guard.Name), err
}

// refusedByPolicy reports whether err is an admission policy's refusal
// with the guard's reason. The API server answers a
// ValidatingAdmissionPolicy's denial with the validation's reason and the
// denial as a cause (k8s.io/apiserver v0.37.2,
// pkg/admission/plugin/policy/validating/dispatcher.go); an authorizer's
// Forbidden (pkg/endpoints/handlers/responsewriters/errors.go) names none.
func refusedByPolicy(err error) bool {
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return false
	}
	st := s.Status()
	return st.Reason == guard.Reason && st.Details != nil && len(st.Details.Causes) > 0
}

// warnings collects the API server's warnings about one request.
type warnings struct{ seen []string }

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.seen = append(w.seen, text) }

func (w *warnings) said(s string) bool {
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

// GuardStatus is the state of the guard: its objects, and the rules each
// node's labels break now (the pipeline's verdicts of the labels in
// namespace ns, judged as the guard judges them).
func GuardStatus(ctx context.Context, c kubernetes.Interface, ns string) (guard.State, error) {
	policy, binding, err := Guard(ctx, c)
	if err != nil {
		return guard.State{}, err
	}
	r, err := pipeline.Run(ctx, c, pipeline.Options{Namespace: ns, Roster: pipeline.LabRoster, LabelsOnly: true})
	if err != nil {
		return guard.State{}, err
	}
	return guard.Judge(policy, binding, r.Nodes, operand.AllRules), nil
}

// UninstallGuard deletes the binding, then the policy, if gpuops applied
// them (or with opts.Force, whoever did), and says whether there was either
// to delete. Nothing installed is no error.
func UninstallGuard(ctx context.Context, c kubernetes.Interface, opts Options) (installed bool, err error) {
	p, b, err := Guard(ctx, c)
	if err != nil || (p == nil && b == nil) {
		return false, err
	}
	if !opts.Force {
		if p != nil && !appliedByGPUOps(p) {
			return true, fmt.Errorf("%s was not installed by gpuops; not deleted (--force deletes it)", policyObject)
		}
		if b != nil && !appliedByGPUOps(b) {
			return true, fmt.Errorf("%s was not installed by gpuops; not deleted (--force deletes it)", bindingObject)
		}
	}
	return true, deleteGuard(ctx, c, p, b, opts)
}

// deleteGuard deletes what exists of the two, binding first, each the very
// object read (UID precondition), and waits until the API server no longer
// judges by it.
func deleteGuard(ctx context.Context, c kubernetes.Interface, p *admissionv1.ValidatingAdmissionPolicy, b *admissionv1.ValidatingAdmissionPolicyBinding, opts Options) error {
	if p == nil && b == nil {
		return nil
	}
	vap := c.AdmissionregistrationV1()
	if b != nil {
		err := vap.ValidatingAdmissionPolicyBindings().Delete(ctx, guard.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &b.UID}})
		if err != nil && !notFound(err) {
			return fmt.Errorf("delete %s: %w", bindingObject, err)
		}
		opts.changed(ObjectChange{Object: bindingObject, Action: "deleted"})
	}
	if p != nil {
		err := vap.ValidatingAdmissionPolicies().Delete(ctx, guard.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !notFound(err) {
			return fmt.Errorf("delete %s: %w", policyObject, err)
		}
		opts.changed(ObjectChange{Object: policyObject, Action: "deleted"})
	}
	err := waitGuard(ctx, c, "stop enforcing", func(refused, warned bool) bool { return !refused && !warned }, opts)
	if apierrors.IsForbidden(err) {
		// who may not create nodes, not even in a dry run, cannot see when
		// the guard is gone; a refusal that comes after will say so itself
		return nil
	}
	return err
}

// appliedByGPUOps reports whether gpuops's field manager shaped the object.
func appliedByGPUOps(o metav1.Object) bool {
	return slices.ContainsFunc(o.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == FieldManager && e.Subresource == ""
	})
}
