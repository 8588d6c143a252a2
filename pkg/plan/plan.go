// Package plan works out, before anything is written, what switching an
// operand on or off on some nodes will do: which deploy labels change on
// which nodes and in which order, how each operand DaemonSet's
// desiredNumberScheduled moves, and which order rule the new labels would
// break. It reads only the objects it is given (no client), so every case is
// a table-driven test.
package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/daemonset"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/words"
)

// Mode says which other operands a change brings along.
type Mode int

const (
	// Only changes the named operand.
	Only Mode = iota
	// WithDependents switches off, first, every operand that needs the named
	// one and is on, furthest first (reverse start-up order).
	WithDependents
	// WithDependencies switches on, first, every operand the named one needs
	// and the node lacks (a host-provided driver is not lacking), furthest
	// first (start-up order).
	WithDependencies
)

// Request is a deploy label change asked for on the command line.
type Request struct {
	Operand string   // the operand named
	On      bool     // "true", else "false"
	Nodes   []string // the nodes to change, in the order they are to be reported
	Mode    Mode
}

// Plan is what a Request will do, step by step.
type Plan struct {
	Operand string `json:"operand"`
	Value   string `json:"value"` // what the named operand's deploy label becomes
	// Steps are done in order; each is one label write per node and one
	// wait until the DaemonSets of its operands have settled.
	Steps []Step `json:"steps"`
	// DaemonSets are the DaemonSets of every operand whose label changes,
	// with desiredNumberScheduled before the change and after the last step,
	// predicted from the node list.
	DaemonSets []Desired `json:"daemonSets"`
	// Breaks are the order rules that the labels, after any step, break on a
	// node where they did not before. A plan with breaks is refused.
	Breaks []Break `json:"breaks"`
}

// Step sets the deploy labels of some operands to one value.
type Step struct {
	Operands []string     `json:"operands"`
	Value    string       `json:"value"`
	Nodes    []NodeLabels `json:"nodes"`
}

// NodeLabels are the deploy labels one step writes on one node.
type NodeLabels struct {
	Node   string            `json:"node"`
	Labels map[string]string `json:"labels"`
}

// Desired is a DaemonSet's desiredNumberScheduled before and after.
type Desired struct {
	DaemonSet string `json:"daemonSet"`
	Operand   string `json:"operand"`
	Before    int    `json:"before"`
	After     int    `json:"after"`
}

// Count is an operand DaemonSet's desiredNumberScheduled as read once
// settled, before the first change and after the last.
type Count struct {
	DaemonSet string `json:"daemonSet"`
	Before    string `json:"before"`
	After     string `json:"after"`
}

// Break is an order rule a plan would break on a node.
type Break struct {
	Node    string `json:"node"`
	Rule    string `json:"rule"`    // the rule's finding, as order-check prints it
	Operand string `json:"operand"` // the dependent
	Needs   string `json:"needs"`   // what it would be left without
}

// Make plans the request over the cluster's nodes (all of them: desired
// counts are cluster-wide) and the DaemonSets that run the roster's
// operands. The operands a mode brings along come from the rules.
func Make(req Request, nodes []*corev1.Node, daemonSets []*appsv1.DaemonSet, roster []operand.Operand, rules []operand.Rule) (*Plan, error) {
	value := strconv.FormatBool(req.On)
	groups := [][]string{}
	switch req.Mode {
	case WithDependents:
		groups = Dependents(rules, req.Operand)
	case WithDependencies:
		groups = Dependencies(rules, req.Operand)
	}
	groups = append(groups, []string{req.Operand})

	byName := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	p := &Plan{Operand: req.Operand, Value: value, Breaks: []Break{}, DaemonSets: []Desired{}}
	steps := make([]Step, len(groups))
	for i, g := range groups {
		steps[i] = Step{Operands: slices.Clone(g), Value: value}
	}
	after := make(map[string]map[string]string, len(req.Nodes))
	for _, name := range req.Nodes {
		n := byName[name]
		if n == nil {
			return nil, fmt.Errorf("node %s not found", name)
		}
		if _, dup := after[name]; dup {
			return nil, fmt.Errorf("node %s is named twice", name)
		}
		change := changing(req, n.Labels, rules)
		labels := maps.Clone(n.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		for i, g := range groups {
			set := map[string]string{}
			for _, o := range g {
				if change[o] {
					set[operand.LabelPrefix+o] = value
					labels[operand.LabelPrefix+o] = value
				}
			}
			if len(set) == 0 {
				continue
			}
			steps[i].Nodes = append(steps[i].Nodes, NodeLabels{Node: name, Labels: set})
			for _, r := range newlyBroken(n.Labels, labels, rules) {
				b := Break{Node: name, Rule: r.Finding, Operand: r.Operand, Needs: r.Needs}
				if !slices.Contains(p.Breaks, b) {
					p.Breaks = append(p.Breaks, b)
				}
			}
		}
		after[name] = labels
	}
	for _, s := range steps {
		// a step lists only the operands it writes somewhere
		s.Operands = slices.DeleteFunc(s.Operands, func(o string) bool { return !written(s, o) })
		if len(s.Nodes) > 0 {
			p.Steps = append(p.Steps, s)
		}
	}
	p.DaemonSets = predict(p.Steps, nodes, after, daemonSets, roster)
	return p, nil
}

// changing decides which operands' labels the request writes on a node with
// these labels: the named one always; under WithDependents each dependent
// that is on; under WithDependencies each needed one that is missing, as
// far down as the chain of needs goes.
func changing(req Request, labels map[string]string, rules []operand.Rule) map[string]bool {
	change := map[string]bool{req.Operand: true}
	switch req.Mode {
	case WithDependents:
		for _, g := range Dependents(rules, req.Operand) {
			for _, o := range g {
				change[o] = operand.Asks(labels, o)
			}
		}
	case WithDependencies:
		// From the named operand down: a need is brought along when it is not
		// Satisfied, and then its own needs are looked at.
		for more := true; more; {
			more = false
			for _, r := range rules {
				if change[r.Operand] && !change[r.Needs] && !Satisfied(labels, r) {
					change[r.Needs], more = true, true
				}
			}
		}
	}
	return change
}

// predict counts, for the DaemonSets of every operand a step writes, the
// nodes they run on before and after, the way the DaemonSet controller
// decides (daemonset.Admission).
func predict(steps []Step, nodes []*corev1.Node, after map[string]map[string]string, daemonSets []*appsv1.DaemonSet, roster []operand.Operand) []Desired {
	out := []Desired{}
	for _, s := range steps {
		for _, name := range s.Operands {
			o, err := operand.Lookup(roster, name)
			if err != nil {
				continue
			}
			for _, ds := range daemonSets {
				if !o.RunBy(ds.Name) {
					continue
				}
				a := daemonset.NewAdmission(ds.Spec.Template.Spec)
				d := Desired{DaemonSet: ds.Name, Operand: name}
				for _, n := range nodes {
					if a.Decide(n).Run {
						d.Before++
					}
					if labels, changed := after[n.Name]; changed {
						moved := *n
						moved.Labels = labels
						n = &moved
					}
					if a.Decide(n).Run {
						d.After++
					}
				}
				out = append(out, d)
			}
		}
	}
	return out
}

// written reports whether the step writes the operand's label on any node.
func written(s Step, name string) bool {
	return slices.ContainsFunc(s.Nodes, func(n NodeLabels) bool {
		_, ok := n.Labels[operand.LabelPrefix+name]
		return ok
	})
}

// Refusal is the error that stops a plan with breaks, nil for a plan without.
func (p *Plan) Refusal() error {
	if len(p.Breaks) == 0 {
		return nil
	}
	return &RefusedError{Value: p.Value, Operand: p.Operand, Breaks: p.Breaks}
}

// RefusedError says which node a change would leave in a broken order and
// how to get there safely.
type RefusedError struct {
	Operand string
	Value   string
	Breaks  []Break
}

func (e *RefusedError) Error() string {
	node := e.Breaks[0].Node
	var left []string
	for _, b := range e.Breaks {
		if b.Node != node {
			continue
		}
		if e.Value == "true" {
			left = append(left, b.Needs)
		} else {
			left = append(left, b.Operand)
		}
	}
	var msg string
	if e.Value == "true" {
		msg = fmt.Sprintf("%s: opting in %s would leave it without %s; opt %s in first, or use --with-dependencies",
			node, e.Operand, strings.Join(left, ", "), pronoun(left))
	} else {
		msg = fmt.Sprintf("%s: opting out %s would leave %s without it; opt %s out first, or use --with-dependents",
			node, e.Operand, strings.Join(left, ", "), pronoun(left))
	}
	if others := e.nodes() - 1; others > 0 {
		msg += fmt.Sprintf(" (and %d more %s)", others, words.Noun(others, "node"))
	}
	return msg
}

func (e *RefusedError) nodes() int {
	var seen []string
	for _, b := range e.Breaks {
		if !slices.Contains(seen, b.Node) {
			seen = append(seen, b.Node)
		}
	}
	return len(seen)
}

func pronoun(names []string) string {
	if len(names) == 1 {
		return "it"
	}
	return "them"
}
