package guard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/operand"
)

// The CEL below says what plan.Broken says, rule for rule, so the policy
// refuses exactly the label changes that optout and optin refuse; the tests
// evaluate it with the API server's own CEL libraries against plan.Broken.

// The policy's base defines two variables, labels and oldLabels (empty on
// CREATE); the generated ones build on them: one per operand a rule names
// and label map (its deploy label's value, "" when missing), then one per
// rule and label map (plan.Broken for that rule).

// ident turns an operand name or a finding into a CEL identifier.
func ident(prefix, name string) string {
	return prefix + strings.ReplaceAll(name, "-", "_")
}

var labelMaps = []struct{ variable, prefix string }{{"labels", ""}, {"oldLabels", "old_"}}

// Variables are the generated variables, in an order where each refers only
// to those before it.
func Variables(rules []operand.Rule) []admissionv1.Variable {
	var operands []string
	for _, r := range rules {
		for _, o := range []string{r.Operand, r.Needs} {
			if !slices.Contains(operands, o) {
				operands = append(operands, o)
			}
		}
	}
	var out []admissionv1.Variable
	for _, m := range labelMaps {
		for _, o := range operands {
			k := quote(operand.LabelPrefix + o)
			out = append(out, admissionv1.Variable{
				Name:       ident(m.prefix, o),
				Expression: fmt.Sprintf("%s in variables.%s ? variables.%s[%s] : ''", k, m.variable, m.variable, k),
			})
		}
	}
	for _, m := range labelMaps {
		for _, r := range rules {
			dep, need := "variables."+ident(m.prefix, r.Operand), "variables."+ident(m.prefix, r.Needs)
			out = append(out, admissionv1.Variable{
				Name:       ident(m.prefix, r.Finding),
				Expression: fmt.Sprintf("%s == 'true' && !(%s)", dep, satisfied(need, r)),
			})
		}
	}
	return out
}

// satisfied is plan.Satisfied in CEL for the value v of the rule's needed
// operand: "true", a host value, or a pause as operand.IsPaused defines it
// (a pause's value, or a suffixable one's "_"+value at the end).
func satisfied(v string, r operand.Rule) string {
	values := []string{quote("true")}
	for _, h := range r.HostValues {
		values = append(values, quote(h))
	}
	var suffixes []string
	for _, p := range operand.Pauses {
		values = append(values, quote(p.Value))
		if p.Suffixed {
			suffixes = append(suffixes, fmt.Sprintf(" || %s.endsWith(%s)", v, quote("_"+p.Value)))
		}
	}
	return fmt.Sprintf("%s in [%s]", v, strings.Join(values, ", ")) + strings.Join(suffixes, "")
}

// Reason is the status reason of the guard's refusal: 403, as for a
// change the user may not make.
const Reason = metav1.StatusReasonForbidden

// Validations are one per rule: a Node may not break a rule that its old
// labels did not break. A change that keeps or removes a break passes, so
// the one who repairs a node is never stopped half-way.
func Validations(rules []operand.Rule) []admissionv1.Validation {
	out := make([]admissionv1.Validation, len(rules))
	for i, r := range rules {
		reason := Reason
		out[i] = admissionv1.Validation{
			Expression: fmt.Sprintf("!variables.%s || variables.%s", ident("", r.Finding), ident("old_", r.Finding)),
			Message:    Message(r),
			Reason:     &reason,
		}
	}
	return out
}

// Message names the rule and the two ways to keep the order.
func Message(r operand.Rule) string {
	has := "true"
	if len(r.HostValues) > 0 {
		has += " (or " + strings.Join(r.HostValues, ", ") + ": on the host)"
	}
	return fmt.Sprintf("%s: %s%s=true needs %s%s=%s; opt %s out first or %s in first "+
		"(gpuops optout NODE %s --with-dependents, gpuops optin NODE %s --with-dependencies)",
		r.Finding, operand.LabelPrefix, r.Operand, operand.LabelPrefix, r.Needs, has,
		r.Operand, r.Needs, r.Needs, r.Operand)
}

// ExemptCondition is the matchCondition that lets the exempt users through
// unjudged; its expression lists them as a JSON array, which CEL reads as a
// list of strings.
const ExemptCondition = "not-exempt"

const exemptPrefix, exemptSuffix = "!(request.userInfo.username in ", ")"

// MatchConditions exempt the users, none for an empty list.
func MatchConditions(exempt []string) []admissionv1.MatchCondition {
	if len(exempt) == 0 {
		return nil
	}
	list, _ := json.Marshal(exempt) // strings always marshal
	return []admissionv1.MatchCondition{{Name: ExemptCondition, Expression: exemptPrefix + string(list) + exemptSuffix}}
}

// Exempt reads the exempt users back from a policy's matchConditions; ok is
// false when the condition is not the one gpuops writes.
func Exempt(conditions []admissionv1.MatchCondition) (users []string, ok bool) {
	for _, c := range conditions {
		if c.Name != ExemptCondition {
			continue
		}
		list, found := strings.CutPrefix(c.Expression, exemptPrefix)
		list, found2 := strings.CutSuffix(list, exemptSuffix)
		if !found || !found2 || json.Unmarshal([]byte(list), &users) != nil {
			return nil, false
		}
		return users, true
	}
	return nil, len(conditions) == 0
}

func quote(s string) string { return "'" + s + "'" }
