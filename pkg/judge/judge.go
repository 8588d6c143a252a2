// Package judge makes three parts of each node's verdict from a snapshot:
// the audit (is every operand a node asks for running there? which has a
// helper paused too long: stuck.go), the order check (is a node running an
// operand without the one it needs?) and the node × operand matrix. It is
// pure: no network, no clock, so every odd case is a table-driven test. It
// returns data only; pkg/report prints it.
package judge

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

type placement struct{ node, daemonSet string }

// Presence counts, per node and DaemonSet, the pods that are present (Running,
// not being deleted) and controlled by that DaemonSet.
type Presence struct {
	count map[placement]int
	total int
}

// NewPresence indexes the pods of a snapshot once, so each lookup is O(1).
func NewPresence(pods []snapshot.Pod) Presence {
	p := Presence{count: make(map[placement]int, len(pods))}
	for _, pod := range pods {
		if pod.DaemonSet == "" || pod.Node == "" || !pod.Present() {
			continue
		}
		p.count[placement{pod.Node, pod.DaemonSet}]++
		p.total++
	}
	return p
}

// On reports how many present pods of the operand stand on the node, counting
// every DaemonSet that runs it.
func (p Presence) On(node string, o operand.Operand) int {
	n := p.count[placement{node, o.DaemonSet}]
	for _, ds := range o.Variants {
		n += p.count[placement{node, ds}]
	}
	return n
}

// Total is the number of present DaemonSet pods in the snapshot.
func (p Presence) Total() int { return p.total }

// SortedNodes returns the snapshot's nodes in natural name order: the
// snapshot's own, not to be changed, when they are in that order already
// (SortNodes), else a sorted copy: a copy for each judge of a whole read
// would be fresh pages of every node, twice for health.
func SortedNodes(s *snapshot.Snapshot) []snapshot.Node {
	if slices.IsSortedFunc(s.Nodes, byNaturalName) {
		return s.Nodes
	}
	nodes := slices.Clone(s.Nodes)
	slices.SortFunc(nodes, byNaturalName)
	return nodes
}

// SortNodes puts the snapshot's nodes in natural name order, in place.
func SortNodes(s *snapshot.Snapshot) { slices.SortFunc(s.Nodes, byNaturalName) }

func byNaturalName(a, b snapshot.Node) int { return NaturalCompare(a.Name, b.Name) }

// NaturalCompare orders node names the way people count (lab-node-2 before
// lab-node-10), for slices.SortFunc.
func NaturalCompare(a, b string) int {
	switch {
	case a == b:
		return 0
	case naturalLess(a, b):
		return -1
	}
	return 1
}

// NodeAudit is the audit verdict of one node.
type NodeAudit struct {
	Node    string   `json:"node"`
	Missing []string `json:"missing"` // operand names, in roster order
	// Stuck are operands a helper paused on the node longer ago than the
	// audit allows (see Stuck), in roster order.
	Stuck []string `json:"stuck,omitempty"`
	// Asked are the operands the node asks for and the ClusterPolicy does
	// not switch off, Missing among them: what a report with one line per
	// check (JUnit) lists. The lab's JSON keeps its two keys.
	Asked []string `json:"-"`
}

// OK reports whether nothing the node asks for is missing or stuck.
func (a NodeAudit) OK() bool { return len(a.Missing) == 0 && len(a.Stuck) == 0 }

// Index is a snapshot indexed once for several judges: its nodes in
// natural name order and its pods' presence. pipeline.Scope.Judge runs the
// audit, the order check and the matrix over one.
type Index struct {
	Nodes    []snapshot.Node
	Presence Presence
}

// NewIndex indexes a snapshot.
func NewIndex(s *snapshot.Snapshot) Index {
	return Index{Nodes: SortedNodes(s), Presence: NewPresence(s.Pods)}
}

// Audit judges every node: each operand whose deploy label is "true" on the
// node must have a present pod of its DaemonSet on that node, unless the
// ClusterPolicy switches the operand off (then no node can run it).
func Audit(s *snapshot.Snapshot, roster []operand.Operand) []NodeAudit {
	return NewIndex(s).Audit(roster)
}

// Audit is the package's Audit of the indexed snapshot.
func (x Index) Audit(roster []operand.Operand) []NodeAudit {
	pres := x.Presence
	out := make([]NodeAudit, 0, len(x.Nodes))
	for _, n := range x.Nodes {
		a := NodeAudit{Node: n.Name, Missing: []string{}, Asked: []string{}}
		for _, o := range roster {
			if o.Off != "" || !o.AskedBy(n.Labels) {
				continue
			}
			a.Asked = append(a.Asked, o.Name)
			if pres.On(n.Name, o) == 0 {
				a.Missing = append(a.Missing, o.Name)
			}
		}
		out = append(out, a)
	}
	return out
}

// AuditFailed reports whether any node misses an operand.
func AuditFailed(audits []NodeAudit) bool {
	return slices.ContainsFunc(audits, func(a NodeAudit) bool { return !a.OK() })
}

// NodeOrder is the order check of one node (as NodeAudit is its audit).
type NodeOrder struct {
	Node     string   `json:"node"`
	Findings []string `json:"findings"` // empty when the node is in a sensible order
	// Rules are the rules judged, broken or not: what a report with one
	// line per check (JUnit) lists. The lab's JSON keeps its keys.
	Rules []operand.Rule `json:"-"`
}

// OK reports whether no rule is broken on the node.
func (v NodeOrder) OK() bool { return len(v.Findings) == 0 }

// String is the lab's one-word verdict: the first finding, or "ok".
func (v NodeOrder) String() string {
	if v.OK() {
		return "ok"
	}
	return v.Findings[0]
}

// NodeNotFoundError says that a node the user named is not in the cluster.
type NodeNotFoundError struct{ Node string }

func (e *NodeNotFoundError) Error() string { return fmt.Sprintf("node %q not found", e.Node) }

// Order checks one node against the rules: a rule is broken when a pod of its
// operand is present on the node and no pod of the operand it needs is, unless
// the rule is excused there (the host provides the needed one).
func Order(s *snapshot.Snapshot, node string, roster []operand.Operand, rules []operand.Rule) (NodeOrder, error) {
	i := slices.IndexFunc(s.Nodes, func(n snapshot.Node) bool { return n.Name == node })
	if i < 0 {
		return NodeOrder{}, &NodeNotFoundError{Node: node}
	}
	c, err := newOrderCheck(roster, rules)
	if err != nil {
		return NodeOrder{}, err
	}
	return c.judge(NewPresence(s.Pods), s.Nodes[i]), nil
}

// OrderAll is Order for every node of the snapshot, in natural name order,
// indexing the pods once.
func OrderAll(s *snapshot.Snapshot, roster []operand.Operand, rules []operand.Rule) ([]NodeOrder, error) {
	return NewIndex(s).OrderAll(roster, rules)
}

// OrderAll is the package's OrderAll of the indexed snapshot.
func (x Index) OrderAll(roster []operand.Operand, rules []operand.Rule) ([]NodeOrder, error) {
	c, err := newOrderCheck(roster, rules)
	if err != nil {
		return nil, err
	}
	out := make([]NodeOrder, len(x.Nodes))
	for i, n := range x.Nodes {
		out[i] = c.judge(x.Presence, n)
	}
	return out, nil
}

// orderCheck is a set of rules with their operands looked up in the roster.
type orderCheck struct {
	rules     []operand.Rule
	dep, need []operand.Operand // by rule
}

func newOrderCheck(roster []operand.Operand, rules []operand.Rule) (orderCheck, error) {
	c := orderCheck{rules: rules}
	for _, r := range rules {
		dep, err := operand.Lookup(roster, r.Operand)
		if err != nil {
			return orderCheck{}, err
		}
		need, err := operand.Lookup(roster, r.Needs)
		if err != nil {
			return orderCheck{}, err
		}
		c.dep, c.need = append(c.dep, dep), append(c.need, need)
	}
	return c, nil
}

func (c orderCheck) judge(pres Presence, n snapshot.Node) NodeOrder {
	v := NodeOrder{Node: n.Name, Findings: []string{}, Rules: c.rules}
	for i, r := range c.rules {
		if pres.On(n.Name, c.dep[i]) > 0 && pres.On(n.Name, c.need[i]) == 0 && !r.Excused(n.Labels, c.need[i]) {
			v.Findings = append(v.Findings, r.Finding)
		}
	}
	return v
}

// MatrixRow is one node of the matrix: which operands are present on it.
type MatrixRow struct {
	Node    string  `json:"node"`
	Present Present `json:"present"` // by matrix column
}

// Present says which of the matrix's columns have their operand present on one
// node: a bit a column. serve holds a row for every node for as long as it
// runs, and a map a row cost some 300 bytes a node (docs/scale.md, "`serve` all
// day"); this is 56 bytes in the row and no allocation. In JSON it is the
// object of column to bool a map would be.
//
// Its columns are the roster's, the slice the matrix was made of: serve
// judges a node or a few a batch, and a slice of column names a batch was
// held by every verdict judged in it, one each after a churn.
type Present struct {
	roster []operand.Operand // a column an operand, shared by the rows
	low    uint64            // columns 0-63
	high   []uint64          // columns from 64 on: only a discovered roster is that long
}

// NewPresent is a row's presence over columns, the named ones present.
func NewPresent(columns []string, present ...string) Present {
	p := Present{roster: make([]operand.Operand, len(columns))}
	for i, c := range columns {
		p.roster[i].Column = c
	}
	for _, c := range present {
		if i := slices.Index(columns, c); i >= 0 {
			p.set(i)
		}
	}
	return p
}

func (p *Present) set(i int) {
	if i < 64 {
		p.low |= 1 << i
		return
	}
	w := i/64 - 1
	for len(p.high) <= w {
		p.high = append(p.high, 0)
	}
	p.high[w] |= 1 << (i % 64)
}

func (p Present) at(i int) bool {
	if i < 64 {
		return p.low&(1<<i) != 0
	}
	w := i/64 - 1
	return w < len(p.high) && p.high[w]&(1<<(i%64)) != 0
}

// Has reports whether the operand of the column is present on the node.
func (p Present) Has(column string) bool {
	for i := range p.roster {
		if p.roster[i].Column == column {
			return p.at(i)
		}
	}
	return false
}

// MarshalJSON writes the row as the map it stands for: an object of column
// to bool, in key order.
func (p Present) MarshalJSON() ([]byte, error) { return json.Marshal(p.Map()) }

// Map is the row as a map of column to presence.
func (p Present) Map() map[string]bool {
	m := make(map[string]bool, len(p.roster))
	for i, o := range p.roster {
		m[o.Column] = p.at(i)
	}
	return m
}

// Matrix is the node × operand table of the cluster.
type Matrix struct {
	Columns   []string    `json:"columns"`
	Rows      []MatrixRow `json:"rows"`
	TotalPods int         `json:"totalPods"` // present pods of any DaemonSet in the namespace
}

// Matrix tabulates which operand is present on which node of the indexed
// snapshot.
func (x Index) Matrix(roster []operand.Operand) Matrix {
	pres := x.Presence
	m := Matrix{TotalPods: pres.Total()}
	for _, o := range roster {
		m.Columns = append(m.Columns, o.Column)
	}
	for _, n := range x.Nodes {
		row := MatrixRow{Node: n.Name, Present: Present{roster: roster}}
		for i, o := range roster {
			if pres.On(n.Name, o) > 0 {
				row.Present.set(i)
			}
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}
