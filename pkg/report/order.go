package report

import (
	"slices"
	"strings"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// orderView is the order verdict of the one node order-check judges: in
// text the lab's one word; wide is the table with what each broken rule
// means there; name is the node if it breaks a rule.
type orderView struct{ v *verdict.Verdict }

func (o orderView) lines() []string { return []string{o.v.Order.String()} }

func (o orderView) blocks(wide bool) []block {
	v := o.v.Order
	verdict := cell{"ok", green}
	if !v.OK() {
		verdict = cell{strings.Join(v.Findings, ","), red}
	}
	t := table{header: []string{"NODE", "VERDICT"}, rows: [][]cell{{{text: v.Node}, verdict}}}
	if wide {
		var why []string
		for _, r := range v.Rules {
			if slices.Contains(v.Findings, r.Finding) {
				why = append(why, explain.Order(r).Message)
			}
		}
		t.header = append(t.header, "WHY")
		t.rows[0] = append(t.rows[0], cell{text: strings.Join(why, "; ")})
	}
	return []block{{table: &t}}
}

func (o orderView) data(or *Origin) any {
	v := o.v.Order
	return struct {
		*Origin
		judge.NodeOrder
		OK      bool   `json:"ok"`
		Verdict string `json:"verdict"`
	}{or, v, v.OK(), v.String()}
}

func (o orderView) names() []string {
	if o.v.Order.OK() {
		return nil
	}
	return []string{o.v.Node}
}

// cases are one per rule judged on the node; a broken one fails saying
// what runs without what.
func (o orderView) cases() []junitCase {
	v := o.v.Order
	var out []junitCase
	for _, r := range v.Rules {
		c := junitCase{Name: r.Finding, Classname: v.Node, Time: noTime}
		if slices.Contains(v.Findings, r.Finding) {
			c.Failure = &junitFailure{Type: "order", Message: r.Finding, Text: explain.Order(r).Message}
		}
		out = append(out, c)
	}
	return out
}
