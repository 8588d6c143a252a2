// Package explain says why: for each operand a node asks for but does not
// run, the reasons read from the snapshot (no DaemonSet, a DaemonSet that does
// not admit the node, a pod that is Pending, Failed, Unknown or being deleted,
// a node that is NotReady or cordoned); and which deploy label values do not
// do what they seem to. It is pure, like the judge: a snapshot in, reasons out.
// Node selection and taint toleration are decided by pkg/daemonset, as
// everywhere in gpuops.
package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// Reason codes, stable for scripts reading the JSON output.
const (
	NodeNotFound      = "node-not-found"
	NodeNotReady      = "node-not-ready"
	NodeCordoned      = "node-cordoned"
	OperandsDisabled  = "operands-disabled"
	NoDaemonSet       = "no-daemonset"
	NotSelected       = "not-selected"
	UntoleratedTaint  = "untolerated-taint"
	PodPending        = "pod-pending"
	PodFailed         = "pod-failed"
	PodUnknown        = "pod-unknown"
	PodSucceeded      = "pod-succeeded"
	PodDeleting       = "pod-deleting"
	NoPodYet          = "no-pod-yet"
	LabelValue        = "label-value"
	UnexpectedOperand = "unexpected"
	// Codes of a deploy label's state on a node, besides LabelValue and the
	// helpers' pause values (operand.Pauses: paused-for-driver-upgrade,
	// paused-for-mig-change, paused-for-vgpu-change).
	HostProvided  = "host-provided"   // driver label pre-installed: the host has the driver
	GPUNotPresent = "gpu-not-present" // deploy labels on a node without nvidia.com/gpu.present=true
	Disabled      = "disabled"        // the ClusterPolicy switches the operand off
)

// Reason is one cause of a finding.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Messages are the reasons' messages, one after the other, as a person
// reads them.
func Messages(rs []Reason) string {
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.Message
	}
	return strings.Join(msgs, "; ")
}

// Missing is one operand a node asks for and does not run, with why.
type Missing struct {
	Node    string   `json:"node"`
	Operand string   `json:"operand"`
	Reasons []Reason `json:"reasons"`
}

// Warning is a node label whose value says more than "run it here" or "do
// not": a helper's pause, a host that provides the operand, a value that
// does not do what it seems to, deploy labels on a node without a GPU.
type Warning struct {
	Node    string `json:"node"`
	Code    string `json:"code"`
	Operand string `json:"operand,omitempty"` // the operand of a deploy label, when it is in the roster
	Label   string `json:"label"`
	Value   string `json:"value"`
	Message string `json:"message"`
	// Of a pause: the field manager that wrote the label and when (from
	// managedFields; absent when they do not say), the helper's progress
	// label, and whether the pause has lasted longer than --stuck-after
	// (then it is a finding: the audit lists it as stuck).
	By       string     `json:"by,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
	Progress string     `json:"progress,omitempty"`
	Stuck    bool       `json:"stuck,omitempty"`
}

// Off is an operand the ClusterPolicy switches off.
type Off struct {
	Operand string `json:"operand"`
	Reason  string `json:"reason"`
}

// Unexpected is an operand pod running on a node that asks for no operand.
type Unexpected struct {
	Node    string `json:"node"`
	Operand string `json:"operand"`
	Pod     string `json:"pod"`
	Message string `json:"message"`
}

// Report is everything explain finds in a snapshot, node by node in the
// judge's order.
type Report struct {
	Missing    []Missing    `json:"missing"`
	Warnings   []Warning    `json:"warnings"`
	Unexpected []Unexpected `json:"unexpected"`
	Disabled   []Off        `json:"disabled"` // roster operands the ClusterPolicy switches off
	Notes      []string     `json:"notes"`    // what the snapshot could not read, and the roster chosen
}

// Empty is a report of nothing: its findings' lists empty (JSON's []), not
// nil; Disabled and Notes unset. Each call makes a new one, so that what is
// written to one reaches no other.
func Empty() Report {
	return Report{Missing: []Missing{}, Warnings: []Warning{}, Unexpected: []Unexpected{}}
}

// DisabledOf are the roster's operands the ClusterPolicy switches off;
// empty, not nil, when none.
func DisabledOf(roster []operand.Operand) []Off {
	out := []Off{}
	for _, o := range roster {
		if o.Off != "" {
			out = append(out, Off{Operand: o.Name, Reason: o.Off})
		}
	}
	return out
}

// Clock is when the audit judges and how long a pause may last: the one
// thing explain does not read from the snapshot.
type Clock struct {
	Now        time.Time
	StuckAfter time.Duration
}

// Explain explains every MISSING and STUCK of the audit, and reports label
// warnings and unexpected pods of the audited nodes, and the operands the
// ClusterPolicy switches off. The snapshot must include the namespace's
// DaemonSets, or every missing operand reads as having no DaemonSet.
func Explain(s *snapshot.Snapshot, roster []operand.Operand, audits []judge.NodeAudit, at Clock) Report {
	x := New(s)
	x.clock = at
	r := Empty()
	r.Disabled, r.Notes = DisabledOf(roster), slices.Clone(s.Notes)
	for _, a := range audits { // one per node, in the judge's order
		for _, name := range a.Missing {
			o, err := operand.Lookup(roster, name)
			if err != nil {
				continue // the audit only names roster operands
			}
			r.Missing = append(r.Missing, Missing{Node: a.Node, Operand: name, Reasons: x.Why(a.Node, o)})
		}
		r.Warnings = append(r.Warnings, x.Warnings(a.Node, roster)...)
		r.Unexpected = append(r.Unexpected, x.Unexpected(a.Node, roster)...)
	}
	return r
}

// Explainer answers questions about one snapshot, indexed once.
type Explainer struct {
	clock Clock
	s     *snapshot.Snapshot
	nodes map[string]*snapshot.Node
	dss   map[string]*snapshot.DaemonSet
	pods  map[placement][]*snapshot.Pod // by DaemonSet and the node it is on or made for
}

type placement struct{ daemonSet, node string }

// New indexes a snapshot.
func New(s *snapshot.Snapshot) *Explainer {
	x := &Explainer{
		s:     s,
		nodes: make(map[string]*snapshot.Node, len(s.Nodes)),
		dss:   make(map[string]*snapshot.DaemonSet, len(s.DaemonSets)),
		pods:  map[placement][]*snapshot.Pod{},
	}
	for i := range s.Nodes {
		x.nodes[s.Nodes[i].Name] = &s.Nodes[i]
	}
	for i := range s.DaemonSets {
		x.dss[s.DaemonSets[i].Name] = &s.DaemonSets[i]
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		node := p.Placement()
		if p.DaemonSet != "" && node != "" {
			k := placement{p.DaemonSet, node}
			x.pods[k] = append(x.pods[k], p)
		}
	}
	return x
}

// Why lists the reasons the operand is not present on the node: first the
// node's own state, then, for each DaemonSet of the operand, its pods there
// that are not running, or why it has none.
func (x *Explainer) Why(node string, o operand.Operand) []Reason {
	n := x.nodes[node]
	if n == nil {
		return []Reason{{NodeNotFound, fmt.Sprintf("node %s is not in the cluster", node)}}
	}
	var out []Reason
	if !n.Ready {
		out = append(out, Reason{NodeNotReady, "node is NotReady: its pods cannot start"})
	}
	if n.Unschedulable {
		out = append(out, Reason{NodeCordoned, "node is cordoned"})
	}
	if n.Labels[operand.OperandsLabel] == "false" {
		out = append(out, Reason{OperandsDisabled, fmt.Sprintf("node has %s=false: the operator removes its deploy labels", operand.OperandsLabel)})
	}
	var dss []*snapshot.DaemonSet
	for _, name := range o.DaemonSets() {
		if d := x.dss[name]; d != nil {
			dss = append(dss, d)
		}
	}
	if len(dss) == 0 {
		return append(out, Reason{NoDaemonSet, fmt.Sprintf("no DaemonSet %s in namespace %s", strings.Join(o.DaemonSets(), " or "), x.s.Namespace)})
	}
	// Of several DaemonSets (precompiled drivers, one per kernel), only those
	// meant for this node say anything; if none is, each says why not.
	var admitting []*snapshot.DaemonSet
	var refusals []Reason
	for _, d := range dss {
		if r, ok := admits(d, n); ok {
			admitting = append(admitting, d)
		} else {
			refusals = append(refusals, r)
		}
	}
	pods := 0
	for _, d := range dss {
		for _, p := range x.pods[placement{d.Name, node}] {
			pods++
			if !p.Present() {
				out = append(out, podReason(p))
			}
		}
	}
	if pods > 0 {
		return out
	}
	if len(admitting) == 0 {
		return append(out, refusals...)
	}
	for _, d := range admitting {
		out = append(out, Reason{NoPodYet, fmt.Sprintf("DaemonSet %s admits the node but has no pod there yet", d.Name)})
	}
	return out
}

func podReason(p *snapshot.Pod) Reason {
	with := func(s string) string {
		if p.Reason == "" {
			return s
		}
		return s + ": " + p.Reason
	}
	switch {
	case p.Deleting:
		return Reason{PodDeleting, fmt.Sprintf("pod %s is being deleted", p.Name)}
	case p.Phase == corev1.PodPending && p.Node == "":
		return Reason{PodPending, with(fmt.Sprintf("pod %s is Pending, not scheduled", p.Name))}
	case p.Phase == corev1.PodPending:
		return Reason{PodPending, with(fmt.Sprintf("pod %s is Pending on the node", p.Name))}
	case p.Phase == corev1.PodFailed:
		return Reason{PodFailed, with(fmt.Sprintf("pod %s Failed", p.Name))}
	case p.Phase == corev1.PodSucceeded:
		return Reason{PodSucceeded, fmt.Sprintf("pod %s has Succeeded: its containers exited", p.Name)}
	}
	return Reason{PodUnknown, with(fmt.Sprintf("pod %s is %s: the node stopped reporting it", p.Name, phaseName(p.Phase)))}
}

func phaseName(p corev1.PodPhase) string {
	if p == "" {
		return "without a phase"
	}
	return string(p)
}

// admits says, from the shared DaemonSet admission, whether the DaemonSet
// places a pod on the node; when it does not, the reason names the first
// mismatch.
func admits(d *snapshot.DaemonSet, n *snapshot.Node) (Reason, bool) {
	dec := d.Admission().Decide(n.API())
	switch {
	case dec.Run:
		return Reason{}, true
	case dec.NotSelected:
		// The shared matcher decided; the selector is walked only to name the mismatch.
		for _, k := range sortedKeys(d.NodeSelector) {
			want := d.NodeSelector[k]
			if got, ok := n.Labels[k]; !ok {
				return Reason{NotSelected, fmt.Sprintf("DaemonSet %s selects %s=%s; the node has no label %s", d.Name, k, want, k)}, false
			} else if got != want {
				return Reason{NotSelected, fmt.Sprintf("DaemonSet %s selects %s=%s; the node has %s=%s", d.Name, k, want, k, got)}, false
			}
		}
		return Reason{NotSelected, fmt.Sprintf("DaemonSet %s: the node does not match its required node affinity", d.Name)}, false
	}
	return Reason{UntoleratedTaint, fmt.Sprintf("DaemonSet %s does not tolerate the node's taint %s", d.Name, dec.Taint.ToString())}, false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
