package guard_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
)

// compile builds the policy's validator the way the API server's
// ValidatingAdmissionPolicy plugin does (compilePolicy in
// k8s.io/apiserver/pkg/admission/plugin/policy/validating): the same CEL
// environment, variables, match conditions, validations and messages.
func compile(t *testing.T, p *admissionv1.ValidatingAdmissionPolicy) validating.Validator {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	vars := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	var variables []plugincel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		var conds []plugincel.ExpressionAccessor
		for i := range p.Spec.MatchConditions {
			conds = append(conds, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conds, vars, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	var validations, messages []plugincel.ExpressionAccessor
	for _, v := range p.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason})
		messages = append(messages, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
	}
	v := validating.NewValidator(
		compiler.CompileCondition(validations, vars, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(nil, vars, environment.StoredExpressions),
		compiler.CompileCondition(messages, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
	if err := v.CompileError(); err != nil {
		t.Fatal(err)
	}
	return v
}

var nodesResource = corev1.SchemeGroupVersion.WithResource("nodes")

// denials evaluates a Node CREATE (old nil) or UPDATE by the user and
// returns the messages of the validations that deny it. An evaluation error
// fails the test.
func denials(t *testing.T, v validating.Validator, username string, old, labels map[string]string) []string {
	t.Helper()
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	var oldObj runtime.Object
	op := admission.Create
	if old != nil {
		oldObj, op = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: old}}, admission.Update
	}
	kind := corev1.SchemeGroupVersion.WithKind("Node")
	attr := admission.NewAttributesRecord(obj, oldObj, kind, "", "n", nodesResource, "", op, nil, false, &user.DefaultInfo{Name: username})
	va := &admission.VersionedAttributes{Attributes: attr, VersionedKind: kind, VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(oldObj)}
	res := v.Validate(context.Background(), nodesResource, va, nil, nil, celconfig.RuntimeCELCostBudget, nil)
	var out []string
	for _, d := range res.Decisions {
		switch d.Evaluation {
		case validating.EvalError:
			t.Fatalf("evaluation error on %v -> %v: %s", old, labels, d.Message)
		case validating.EvalDeny:
			if d.Reason != metav1.StatusReasonForbidden {
				t.Errorf("reason %s, want Forbidden", d.Reason)
			}
			out = append(out, d.Message)
		}
	}
	return out
}

// want is what the policy must say, from plan.Broken (what optout, optin
// and, on pods, order-check judge by): the message of each rule the new
// labels break and the old ones did not.
func want(old, labels map[string]string) []string {
	var out []string
	was := plan.Broken(old, operand.AllRules)
	for _, r := range plan.Broken(labels, operand.AllRules) {
		if !slices.ContainsFunc(was, func(w operand.Rule) bool { return w.Finding == r.Finding }) {
			out = append(out, guard.Message(r))
		}
	}
	return out
}

// ruleOperands are the operands the rules name, in rule order.
func ruleOperands() []string {
	var out []string
	for _, r := range operand.AllRules {
		for _, o := range []string{r.Operand, r.Needs} {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// labelValues are the values the big table tries: absent, "true", "false".
var labelValues = []string{"", "true", "false"}

// labelSets are every combination of absent, "true" and "false" over the
// first operands the rules name (3^7 = 2,187 sets: the catalog's fourteen
// would be 4.8 million), then a seeded sample of combinations over all of
// them.
func labelSets() []map[string]string {
	ops := ruleOperands()
	sets := []map[string]string{{}}
	for _, o := range ops[:min(7, len(ops))] {
		var next []map[string]string
		for _, s := range sets {
			next = append(next, s)
			for _, v := range []string{"true", "false"} {
				c := maps.Clone(s)
				c[operand.LabelPrefix+o] = v
				next = append(next, c)
			}
		}
		sets = next
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := map[string]string{}
		for _, o := range ops {
			if v := labelValues[rnd.IntN(len(labelValues))]; v != "" {
				s[operand.LabelPrefix+o] = v
			}
		}
		sets = append(sets, s)
	}
	return sets
}

func render(t *testing.T, o guard.Options) *guard.Objects {
	t.Helper()
	objs, err := guard.Render(gpuops.Kustomize, operand.AllRules, o)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Every label set, created and reached by changing one label, is judged by
// the policy exactly as plan.Broken judges it.
func TestPolicyAgreesWithPlan(t *testing.T) {
	t.Parallel() // tens of thousands of CEL evaluations each, nothing shared
	v := compile(t, render(t, guard.Options{Mode: guard.Deny}).Policy)
	sets := labelSets()
	if len(sets) != 2187+2000 {
		t.Fatalf("%d label sets, want 3^7 + 2,000", len(sets))
	}
	denied := 0
	for _, s := range sets {
		olds := []map[string]string{nil}
		for k, v := range s { // the same node one label change before
			for _, other := range labelValues {
				if other == v {
					continue
				}
				o := maps.Clone(s)
				if other == "" {
					delete(o, k)
				} else {
					o[k] = other
				}
				olds = append(olds, o)
			}
		}
		for _, old := range olds {
			got, w := denials(t, v, "someone", old, s), want(old, s)
			if !slices.Equal(got, w) {
				t.Fatalf("%v -> %v:\n policy %q\n   plan %q", old, s, got, w)
			}
			if len(got) > 0 {
				denied++
			}
		}
	}
	if denied == 0 {
		t.Fatal("no change was denied: the table proves nothing")
	}
	t.Logf("%d label sets, %d changes denied", len(sets), denied)
}

// Values other than true and false: the host's, the operator's pauses, and
// the ones that only look like true.
func TestPolicyAgreesWithPlanOnOddValues(t *testing.T) {
	t.Parallel() // tens of thousands of CEL evaluations each, nothing shared
	v := compile(t, render(t, guard.Options{Mode: guard.Deny}).Policy)
	values := []string{"", "true", "false", "True", "TRUE", "pre-installed", "paused-for-driver-upgrade", "paused-for-mig-change"}
	for _, r := range operand.AllRules {
		var sets []map[string]string
		for _, dep := range values {
			for _, need := range append(values, "absent") {
				s := map[string]string{operand.LabelPrefix + r.Operand: dep}
				if need != "absent" {
					s[operand.LabelPrefix+r.Needs] = need
				}
				sets = append(sets, s)
			}
		}
		for _, s := range sets {
			for _, old := range append([]map[string]string{nil}, sets...) {
				if got, w := denials(t, v, "someone", old, s), want(old, s); !slices.Equal(got, w) {
					t.Fatalf("%s: %v -> %v:\n policy %q\n   plan %q", r.Finding, old, s, got, w)
				}
			}
		}
	}
}

// pauseValues are the deploy label values the pause test must get right:
// every pause of the catalog, as written, suffixed (whether or not the
// helper suffixes) and near it, beside values that are no pause.
func pauseValues() []string {
	values := []string{"", "true", "false", "pre-installed", "paused-for-", "paused-for-something-else", "Paused-for-driver-upgrade"}
	for _, p := range operand.Pauses {
		values = append(values, p.Value, "true_"+p.Value, "foo_"+p.Value, "pre-installed_"+p.Value, "_"+p.Value,
			p.Value+"_x", "x"+p.Value, strings.ToUpper(p.Value))
	}
	return values
}

// The policy takes a value of the needed operand's label for a pause
// exactly where operand.IsPaused does, on create and on update.
func TestPolicyPausesAreOperandPauses(t *testing.T) {
	v := compile(t, render(t, guard.Options{Mode: guard.Deny}).Policy)
	var paused, unpaused int
	for _, value := range pauseValues() {
		if operand.IsPaused(value) {
			paused++
		} else {
			unpaused++
		}
		for _, r := range operand.AllRules {
			dep, need := operand.LabelPrefix+r.Operand, operand.LabelPrefix+r.Needs
			labels := map[string]string{dep: "true", need: value}
			satisfied := value == "true" || slices.Contains(r.HostValues, value) || operand.IsPaused(value)
			for _, old := range []map[string]string{nil, {dep: "true", need: "true"}} {
				// (a dependent with two rules may break the other one here)
				if denied := slices.Contains(denials(t, v, "someone", old, labels), guard.Message(r)); denied == satisfied {
					t.Errorf("%s, %s=%q (operand.IsPaused %v), old %v: denied %v", r.Finding, need, value, operand.IsPaused(value), old, denied)
				}
			}
		}
	}
	if paused == 0 || unpaused == 0 {
		t.Fatalf("%d paused values, %d others: the table proves nothing", paused, unpaused)
	}
}

func TestExemptUsersAreNotJudged(t *testing.T) {
	exempt := guard.DefaultExempt("gpu-operator")
	objs := render(t, guard.Options{Mode: guard.Deny, Exempt: exempt})
	if got, ok := guard.Exempt(objs.Policy.Spec.MatchConditions); !ok || !slices.Equal(got, exempt) {
		t.Errorf("exempt users read back: %v %v, want %v", got, ok, exempt)
	}
	v := compile(t, objs.Policy)
	full := map[string]string{}
	for _, o := range ruleOperands() {
		full[operand.LabelPrefix+o] = "true"
	}
	bad := maps.Clone(full)
	bad[operand.LabelPrefix+operand.ContainerToolkit] = "false"
	if len(want(full, bad)) == 0 {
		t.Fatal("the change must break a rule")
	}
	for _, u := range exempt {
		if got := denials(t, v, u, full, bad); len(got) > 0 {
			t.Errorf("%s is exempt, got %q", u, got)
		}
	}
	for _, u := range []string{"kubernetes-admin", "system:serviceaccount:other:gpu-operator", "system:serviceaccount:gpu-operator:default"} {
		if got := denials(t, v, u, full, bad); !slices.Equal(got, want(full, bad)) {
			t.Errorf("%s is not exempt, got %q", u, got)
		}
	}
	// Any username survives the trip through CEL, quotes and all.
	odd := []string{`a"b`, `c\d`, "e'f", "<g>"}
	v = compile(t, render(t, guard.Options{Mode: guard.Deny, Exempt: odd}).Policy)
	for _, u := range odd {
		if got := denials(t, v, u, full, bad); len(got) > 0 {
			t.Errorf("%q is exempt, got %q", u, got)
		}
	}
}

func TestRenderModes(t *testing.T) {
	for _, tc := range []struct {
		mode guard.Mode
		want []admissionv1.ValidationAction
	}{
		{guard.Deny, []admissionv1.ValidationAction{admissionv1.Deny}},
		{guard.Warn, []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}},
	} {
		b := render(t, guard.Options{Mode: tc.mode}).Binding
		if !slices.Equal(b.Spec.ValidationActions, tc.want) || guard.ModeOf(b.Spec.ValidationActions) != tc.mode {
			t.Errorf("%s: %v", tc.mode, b.Spec.ValidationActions)
		}
	}
	p := render(t, guard.Options{Mode: guard.Deny}).Policy
	if len(p.Spec.Validations) != len(operand.AllRules) || len(p.Spec.MatchConditions) != 0 {
		t.Errorf("%d validations, %d match conditions; want one per rule and none", len(p.Spec.Validations), len(p.Spec.MatchConditions))
	}
	if fmt.Sprint(p.Spec.MatchConstraints.ResourceRules[0].Operations) != "[CREATE UPDATE]" {
		t.Errorf("operations %v", p.Spec.MatchConstraints.ResourceRules[0].Operations)
	}
}
