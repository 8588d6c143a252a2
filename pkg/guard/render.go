// Package guard is gpuops's cluster-wide guard rail: a ValidatingAdmissionPolicy
// and its binding that refuse, in the API server itself, a Node whose deploy
// labels break one of the operator's order rules (pkg/operand) where they did
// not before, whoever sends it. It is rendered from the embedded kustomize
// base kustomize/guard with CEL generated from the same rules that
// order-check and optout/optin judge by.
package guard

import (
	"fmt"
	"io/fs"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/render"
)

// Name is the name of the policy and of its binding.
const Name = "gpuops-guard"

// BaseDir is the guard's kustomize base inside the kustomize/ tree.
const BaseDir = "kustomize/guard"

// Mode is what the API server does with a request that breaks a rule.
type Mode string

const (
	Deny Mode = "deny" // refuse it
	Warn Mode = "warn" // let it through with a warning to the client and an audit annotation
)

// Modes are the modes, in the order --help lists them.
var Modes = []Mode{Deny, Warn}

// Actions are the binding's validationActions of the mode.
func (m Mode) Actions() []admissionv1.ValidationAction {
	if m == Warn {
		return []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}
	}
	return []admissionv1.ValidationAction{admissionv1.Deny}
}

// ModeOf reads the mode back from a binding's validationActions.
func ModeOf(actions []admissionv1.ValidationAction) Mode {
	for _, a := range actions {
		if a == admissionv1.Deny {
			return Deny
		}
	}
	return Warn
}

// DefaultExempt are the usernames of the operator's service accounts
// (operand.OperatorAccounts) in namespace ns.
func DefaultExempt(ns string) []string {
	out := make([]string, len(operand.OperatorAccounts))
	for i, sa := range operand.OperatorAccounts {
		out[i] = "system:serviceaccount:" + ns + ":" + sa
	}
	return out
}

// Options shape the rendered guard.
type Options struct {
	Mode   Mode
	Exempt []string // usernames the policy does not judge
}

// Objects are the rendered guard.
type Objects struct {
	Policy  *admissionv1.ValidatingAdmissionPolicy
	Binding *admissionv1.ValidatingAdmissionPolicyBinding
	// PolicyYAML and BindingYAML are what gets applied, as rendered.
	PolicyYAML, BindingYAML []byte
}

// Render builds the guard from the base in tree (which holds the kustomize/
// directory) with one validation per rule.
func Render(tree fs.FS, rules []operand.Rule, o Options) (*Objects, error) {
	var patch []map[string]any
	for _, v := range Variables(rules) {
		patch = append(patch, map[string]any{"op": "add", "path": "/spec/variables/-", "value": v})
	}
	patch = append(patch, map[string]any{"op": "add", "path": "/spec/validations", "value": Validations(rules)})
	if mc := MatchConditions(o.Exempt); len(mc) > 0 {
		patch = append(patch, map[string]any{"op": "add", "path": "/spec/matchConditions", "value": mc})
	}
	policyPatch, err := yaml.Marshal(patch)
	if err != nil {
		return nil, err
	}
	bindingPatch, err := yaml.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/validationActions", "value": o.Mode.Actions()},
	})
	if err != nil {
		return nil, err
	}
	kust, err := yaml.Marshal(map[string]any{
		"resources": []string{"../../" + BaseDir},
		"patches": []map[string]any{
			{"target": map[string]string{"kind": "ValidatingAdmissionPolicy", "name": Name}, "patch": string(policyPatch)},
			{"target": map[string]string{"kind": "ValidatingAdmissionPolicyBinding", "name": Name}, "patch": string(bindingPatch)},
		},
	})
	if err != nil {
		return nil, err
	}
	res, err := render.Overlay(tree, "guard", string(kust))
	if err != nil {
		return nil, fmt.Errorf("render the guard: %w", err)
	}
	out := &Objects{}
	for _, r := range res.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		switch r.GetKind() {
		case "ValidatingAdmissionPolicy":
			out.PolicyYAML, out.Policy = y, &admissionv1.ValidatingAdmissionPolicy{}
			err = yaml.UnmarshalStrict(y, out.Policy)
		case "ValidatingAdmissionPolicyBinding":
			out.BindingYAML, out.Binding = y, &admissionv1.ValidatingAdmissionPolicyBinding{}
			err = yaml.UnmarshalStrict(y, out.Binding)
		default:
			err = fmt.Errorf("unexpected %s %s", r.GetKind(), r.GetName())
		}
		if err != nil {
			return nil, fmt.Errorf("render the guard: %w", err)
		}
	}
	if out.Policy == nil || out.Binding == nil || out.Policy.Name != Name || out.Binding.Spec.PolicyName != Name {
		return nil, fmt.Errorf("render the guard: base %s must yield the policy and binding %s", BaseDir, Name)
	}
	return out, nil
}
