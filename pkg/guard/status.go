package guard

import (
	"slices"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// State is what `guard status` reports.
type State struct {
	Installed bool `json:"installed"` // the policy and its binding both exist
	Mode      Mode `json:"mode,omitempty"`
	// Current says the installed policy judges by the rules of this gpuops.
	Current bool     `json:"current"`
	Exempt  []string `json:"exempt"`
	// Warnings are the API server's type-checking warnings about the policy.
	Warnings []string `json:"warnings"`
	// Breaking are the nodes whose labels break a rule now, in natural order:
	// the guard lets them be, but refuses any change that breaks one more.
	Breaking []NodeBreaks `json:"breaking"`
}

// NodeBreaks are the rules one node's labels break.
type NodeBreaks struct {
	Node  string   `json:"node"`
	Rules []string `json:"rules"`
}

// Judge reads the state of the guard from the live policy and binding (nil
// when missing) and the pipeline's verdicts, whose LabelsBreak are the rules
// each node's labels break as the guard judges them.
func Judge(policy *admissionv1.ValidatingAdmissionPolicy, binding *admissionv1.ValidatingAdmissionPolicyBinding, nodes []verdict.Verdict, rules []operand.Rule) State {
	st := State{Exempt: []string{}, Warnings: []string{}, Breaking: []NodeBreaks{}}
	if policy != nil && binding != nil {
		st.Installed = true
		st.Mode = ModeOf(binding.Spec.ValidationActions)
		st.Exempt, _ = Exempt(policy.Spec.MatchConditions)
		st.Current = equality.Semantic.DeepEqual(policy.Spec.Validations, Validations(rules)) &&
			equality.Semantic.DeepEqual(generated(policy.Spec.Variables), Variables(rules))
		if tc := policy.Status.TypeChecking; tc != nil {
			for _, w := range tc.ExpressionWarnings {
				st.Warnings = append(st.Warnings, w.FieldRef+": "+w.Warning)
			}
		}
	}
	for _, v := range nodes { // in the pipeline's natural order
		if len(v.LabelsBreak) > 0 {
			st.Breaking = append(st.Breaking, NodeBreaks{Node: v.Node, Rules: v.LabelsBreak})
		}
	}
	return st
}

// Enforcement is how the API server took the guard just installed.
type Enforcement struct {
	Mode Mode // the binding's mode
	// Exempt is the caller's username when the guard exempts them: the
	// guard lets their probe through whatever, so it was not probed and
	// may not be enforced yet. Empty when the probe found it enforced.
	Exempt string
}

// generated drops the base's own variables (labels, oldLabels).
func generated(vars []admissionv1.Variable) []admissionv1.Variable {
	return slices.DeleteFunc(slices.Clone(vars), func(v admissionv1.Variable) bool {
		return slices.ContainsFunc(labelMaps, func(m struct{ variable, prefix string }) bool { return m.variable == v.Name })
	})
}
