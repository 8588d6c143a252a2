// Package summary is the fleet view: the judges' verdicts grouped by a node
// label (a GPU product, a node pool). Per group and operand it counts the
// nodes that ask for it, run it, miss it, have it paused or disabled; per
// group and start-up rule the nodes that break it; and per node it keeps
// every operand's state and every finding with its reason. It is pure like
// the judges it reads: the pipeline's verdicts in, data out; pkg/report
// prints it.
package summary

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
)

// DefaultGroupBy is the label GPU Feature Discovery sets to the GPU model:
// on most fleets, one node pool per value.
const DefaultGroupBy = operand.GPUProductLabel

// NoGroup is the group of nodes without the label (or with an empty value).
const NoGroup = "(none)"

// GroupOf is the group of a node with these labels: its value of the
// groupBy label, or NoGroup.
func GroupOf(labels map[string]string, groupBy string) string {
	return cmp.Or(labels[groupBy], NoGroup)
}

// State is one fact about an operand on a node. A node can be in several
// states for one operand (asked and running; asked and missing).
type State uint8

// The states, in the order reports show them. A new state is one more
// constant before numStates, its name, and a line in cellOf.
const (
	Asked    State = iota // its deploy label is "true"
	Running               // a pod of its DaemonSet is Running there
	Missing               // asked and not running: what audit reports
	Paused                // a helper paused its deploy label (operand.PauseOf)
	Disabled              // the ClusterPolicy switches it off, its deploy label is "false", or the node's operands label is
	numStates
)

var stateNames = [numStates]string{"asked", "running", "missing", "paused", "disabled"}

// States lists every state, in report order.
var States = func() []State {
	s := make([]State, numStates)
	for i := range s {
		s[i] = State(i)
	}
	return s
}()

func (s State) String() string { return stateNames[s] }

// MarshalText names the state in JSON and YAML.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Cell is the set of states of one operand on one node.
type Cell uint8

// Has reports whether the operand is in the state on the node.
func (c Cell) Has(s State) bool { return c&(1<<s) != 0 }

func (c *Cell) set(s State) { *c |= 1 << s }

// shownFirst orders the states a one-symbol view of a cell picks from: a
// finding before an intention before a fact.
var shownFirst = []State{Missing, Paused, Disabled, Running}

// Shown is the one state a grid shows for the cell; false when the node
// neither asks for the operand nor runs it.
func (c Cell) Shown() (State, bool) {
	for _, s := range shownFirst {
		if c.Has(s) {
			return s, true
		}
	}
	return 0, false
}

// cellOf says what state an operand is in on a node.
func cellOf(labels map[string]string, o operand.Operand, running bool) Cell {
	var c Cell
	v, labelled := o.Label(labels)
	if o.Off == "" && o.AskedBy(labels) { // switched off: no node can run it
		c.set(Asked)
		if !running {
			c.set(Missing)
		}
	}
	if running {
		c.set(Running)
	}
	if _, _, paused := operand.PauseOf(v); labelled && paused {
		c.set(Paused)
	}
	if o.Off != "" || (labelled && v == "false") || labels[operand.OperandsLabel] == "false" {
		c.set(Disabled)
	}
	return c
}

// Counts is, for one operand of a group, how many nodes are in each state.
type Counts [numStates]int

// Of is the count of one state.
func (c Counts) Of(s State) int { return c[s] }

// MarshalJSON writes the counts as {"asked": n, "running": n, ...}, in
// States order.
func (c Counts) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, s := range States {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, s.String())
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(c[s]), 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes, so Go programs can decode a
// summary into these types; an unknown state is an error.
func (c *Counts) UnmarshalJSON(b []byte) error {
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = Counts{}
	for name, n := range m {
		i := slices.Index(stateNames[:], name)
		if i < 0 {
			return fmt.Errorf("unknown state %q", name)
		}
		c[i] = n
	}
	return nil
}

// OperandCounts are the counts of one operand in a group.
type OperandCounts struct {
	Operand string `json:"operand"`
	Counts  Counts `json:"counts"`
}

// RuleCount is how many nodes of a group break one start-up rule.
type RuleCount struct {
	Finding string `json:"finding"`
	Nodes   int    `json:"nodes"`
}

// Group is one value of the grouping label and what its nodes say.
type Group struct {
	Name     string          `json:"name"` // the label's value, or NoGroup
	Nodes    int             `json:"nodes"`
	Findings int             `json:"nodesWithFindings"`
	Operands []OperandCounts `json:"operands"` // in roster order
	Order    []RuleCount     `json:"order"`    // in rule order
	// Health counts the group's GPU nodes that can run GPU work and those
	// that cannot, with their root causes; nil when health was not judged.
	Health *HealthCounts `json:"health,omitempty"`
	// Upgrades counts the group's nodes in the driver rollout by verdict
	// (pkg/upgrade); nil when the rollout was not judged.
	Upgrades map[string]int `json:"upgrades,omitempty"`
}

// HealthCounts are a group's GPU nodes by health.
type HealthCounts struct {
	Ready    int          `json:"ready"`
	Unusable int          `json:"unusable"`
	Causes   []CauseCount `json:"causes"` // most nodes first
	// GPUs are the devices the group's GPU nodes were asked to offer and
	// offer (health.Offered), over the nodes whose ask can be told; nil
	// when none can.
	GPUs *GPUCounts `json:"gpus,omitempty"`
	// OutOfService counts the group's GPU nodes out of service by who took
	// them out (the ledger's actors); nil when none is.
	OutOfService map[string]int `json:"outOfService,omitempty"`
}

// GPUCounts sum what nodes were asked to offer and offer, over Nodes nodes.
type GPUCounts struct {
	health.GPUs
	Nodes int `json:"nodes"`
}

func (c *GPUCounts) add(g health.GPUs, nodes int) {
	c.Asked += g.Asked
	c.Advertised += g.Advertised
	c.Nodes += nodes
}

// CauseCount is how many of a group's nodes one root cause makes unusable.
type CauseCount struct {
	Code    string `json:"code"`
	Operand string `json:"operand,omitempty"`
	Nodes   int    `json:"nodes"`
}

// add counts a node's health, and what it offers when that can be told.
func (h *HealthCounts) add(n *health.Node, gpus health.GPUs, told bool) {
	if !n.Judged {
		return
	}
	if e := n.OutOfService; e != nil {
		if h.OutOfService == nil {
			h.OutOfService = map[string]int{}
		}
		h.OutOfService[e.Actor]++
	}
	if told {
		if h.GPUs == nil {
			h.GPUs = &GPUCounts{}
		}
		h.GPUs.add(gpus, 1)
	}
	if n.Usable {
		h.Ready++
		return
	}
	h.Unusable++
	i := slices.IndexFunc(h.Causes, func(c CauseCount) bool { return c.Code == n.Cause.Code && c.Operand == n.Cause.Operand })
	if i < 0 {
		h.Causes = append(h.Causes, CauseCount{Code: n.Cause.Code, Operand: n.Cause.Operand})
		i = len(h.Causes) - 1
	}
	h.Causes[i].Nodes++
}

// Kinds of finding.
const (
	MissingFinding = "missing" // an operand the node asks for is not running: audit's MISSING
	OrderFinding   = "order"   // a start-up rule is broken: order-check's finding
	StuckFinding   = "stuck"   // a helper's pause lasts longer than allowed: audit's STUCK
)

// Finding is one thing wrong on a node, with why.
type Finding struct {
	Kind    string           `json:"kind"`    // MissingFinding, StuckFinding or OrderFinding
	Subject string           `json:"subject"` // the operand, or the rule's finding
	Reasons []explain.Reason `json:"reasons"`
}

// Node is one node of the fleet.
type Node struct {
	Name     string    `json:"name"`
	Group    string    `json:"group"`
	Cells    []Cell    `json:"-"` // by operand, in roster order
	Findings []Finding `json:"findings"`
	// Health is whether it can run GPU work; nil when not judged.
	Health *health.Node `json:"health,omitempty"`
}

// Fleet is the whole view.
type Fleet struct {
	GroupBy  string
	Operands []operand.Operand
	Rules    []operand.Rule
	Groups   []Group // in natural order of their names, NoGroup last
	Nodes    []Node  // group by group in Groups' order, natural name order within
	// Rollout is the driver upgrade of the whole fleet, when judged: its
	// budget is the policy's, not a group's.
	Rollout *upgrade.Rollout
}

// Findings counts the findings of every node.
func (f Fleet) Findings() int {
	n := 0
	for _, node := range f.Nodes {
		n += len(node.Findings)
	}
	return n
}

// Build groups the pipeline's verdicts of the snapshot's nodes (in the
// judges' natural order, reasons included) by the value of the groupBy node
// label; the labels say each operand's state on each node.
func Build(s *snapshot.Snapshot, verdicts []verdict.Verdict, roster []operand.Operand, rules []operand.Rule, groupBy string) Fleet {
	nodes := make(map[string]*snapshot.Node, len(s.Nodes))
	for i := range s.Nodes {
		nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	f := Fleet{GroupBy: groupBy, Operands: roster, Rules: rules}
	groups := map[string]*Group{}
	byGroup := map[string][]Node{}
	for _, v := range verdicts {
		node := nodes[v.Node]
		var l map[string]string
		if node != nil {
			l = node.Labels
		}
		name := GroupOf(l, groupBy)
		g := groups[name]
		if g == nil {
			g = newGroup(name, roster, rules)
			groups[name] = g
		}
		n := Node{Name: v.Node, Group: name, Cells: make([]Cell, len(roster)), Findings: []Finding{}, Health: v.Health}
		if v.Health != nil {
			if g.Health == nil {
				g.Health = &HealthCounts{Causes: []CauseCount{}}
			}
			var gpus health.GPUs
			told := false
			if node != nil {
				gpus, told = health.Offered(*node, s.Offers, s.DevicePools[v.Node])
			}
			g.Health.add(v.Health, gpus, told)
		}
		if v.Upgrade != nil {
			if g.Upgrades == nil {
				g.Upgrades = map[string]int{}
			}
			g.Upgrades[v.Upgrade.Verdict]++
		}
		for j, o := range roster {
			c := cellOf(l, o, v.Row.Present.Has(o.Column))
			n.Cells[j] = c
			for _, st := range States {
				if c.Has(st) {
					g.Operands[j].Counts[st]++
				}
			}
		}
		for _, op := range v.Audit.Missing {
			n.Findings = append(n.Findings, Finding{Kind: MissingFinding, Subject: op, Reasons: missingReasons(v, op)})
		}
		for _, op := range v.Audit.Stuck {
			n.Findings = append(n.Findings, Finding{Kind: StuckFinding, Subject: op, Reasons: stuckReasons(v, op)})
		}
		for j, r := range rules {
			if slices.Contains(v.Order.Findings, r.Finding) {
				g.Order[j].Nodes++
				n.Findings = append(n.Findings, Finding{Kind: OrderFinding, Subject: r.Finding, Reasons: []explain.Reason{explain.Order(r)}})
			}
		}
		g.Nodes++
		if len(n.Findings) > 0 {
			g.Findings++
		}
		byGroup[name] = append(byGroup[name], n)
	}
	for _, g := range groups {
		if h := g.Health; h != nil {
			sortCauses(h.Causes)
		}
		f.Groups = append(f.Groups, *g)
	}
	slices.SortFunc(f.Groups, func(a, b Group) int { return compareGroups(a.Name, b.Name) })
	for _, g := range f.Groups {
		f.Nodes = append(f.Nodes, byGroup[g.Name]...)
	}
	return f
}

func missingReasons(v verdict.Verdict, op string) []explain.Reason {
	for _, m := range v.Why().Missing {
		if m.Operand == op {
			return m.Reasons
		}
	}
	return nil
}

func stuckReasons(v verdict.Verdict, op string) []explain.Reason {
	for _, w := range v.Why().Warnings {
		if w.Stuck && w.Operand == op {
			return []explain.Reason{{Code: w.Code, Message: w.Message}}
		}
	}
	return nil
}

func newGroup(name string, roster []operand.Operand, rules []operand.Rule) *Group {
	g := &Group{Name: name, Operands: make([]OperandCounts, len(roster)), Order: make([]RuleCount, len(rules))}
	for i, o := range roster {
		g.Operands[i].Operand = o.Name
	}
	for i, r := range rules {
		g.Order[i].Finding = r.Finding
	}
	return g
}

// compareGroups orders group names as people count, the nodes without the
// label last.
func compareGroups(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == NoGroup:
		return 1
	case b == NoGroup:
		return -1
	}
	return judge.NaturalCompare(a, b)
}
