// Package ledger says, for a node taken out of service (cordoned, or
// tainted against new work), who took it out and since when: the GPU
// Operator's driver upgrade controller, k8s-driver-manager, NVSentinel,
// kured, gpuops's own quarantine, a person, or someone it cannot tell. It
// reads the marks each of them leaves (pkg/operand, outofservice.go) and,
// failing those, the field manager that last set spec.unschedulable or
// spec.taints. It is pure: a snapshot node comes in, an entry goes out.
package ledger

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// The actors, a fixed set: a metric's label takes no other value.
const (
	UpgradeController = "upgrade-controller"
	DriverManager     = "driver-manager"
	NVSentinel        = "nvsentinel"
	Kured             = "kured"
	Gpuops            = "gpuops"
	Person            = "person"
	Unknown           = "unknown"
)

// Actors are every actor, in the order the ledger tries them.
var Actors = []string{Gpuops, UpgradeController, DriverManager, NVSentinel, Kured, Person, Unknown}

// Entry says who took one node out of service.
type Entry struct {
	Actor string `json:"actor"`
	// By is the mark the actor was told by: its annotation or label, or
	// the field manager of the cordon or the taints.
	By string `json:"by"`
	// Since is when: gpuops's record of its quarantine, else the time of
	// the managedFields entry of the cordon's (or the taints') writer, its
	// last write to the node; nil when no entry says.
	Since    *time.Time `json:"since,omitempty"`
	Cordoned bool       `json:"cordoned"`
	// Taints are the node's taints that keep new work off it, as
	// key:effect (Excluded says which do not).
	Taints []string `json:"taints,omitempty"`
	// Cause is, for gpuops's quarantine, the health cause it was put for
	// (code, then operand when there is one).
	Cause string `json:"cause,omitempty"`
}

// Of says who took the node out of service; nil when it is neither
// cordoned nor tainted against new work.
func Of(n *snapshot.Node) *Entry {
	taints := Blocking(n.Taints)
	if !n.Unschedulable && len(taints) == 0 {
		return nil
	}
	e := &Entry{Cordoned: n.Unschedulable, Taints: taints}
	writer := n.Cordon
	if !n.Unschedulable {
		writer = n.Tainter
	}
	if writer != nil {
		since := writer.Time
		e.Since = &since
	}
	if rec, ok := RecordOf(n); ok && n.Unschedulable && n.Cordon != nil && n.Cordon.Manager == operand.QuarantineManager {
		// Its record and its cordon: a record on a node someone else
		// cordoned since (or uncordoned and cordoned again) is stale.
		since := rec.Since
		e.Actor, e.By, e.Since, e.Cause = Gpuops, operand.QuarantineAnnotation, &since, rec.CauseString()
		return e
	}
	if e.Actor, e.By = Marked(n); e.Actor != "" {
		return e
	}
	e.Actor, e.By = Unknown, ""
	if writer != nil {
		e.Actor, e.By = ByManager(writer.Manager), writer.Manager
	}
	return e
}

// Marks are what gpuops's quarantine needs of a node beside its entry.
type Marks struct {
	// Recorded: gpuops's record is on the node, whether or not it still
	// holds it (Of says).
	Recorded bool
	// Other is the actor, other than gpuops, whose mark the node bears;
	// "" when none.
	Other string
}

// MarksOf reads the node's marks.
func MarksOf(n *snapshot.Node) Marks {
	_, recorded := RecordOf(n)
	other, _ := Marked(n)
	return Marks{Recorded: recorded, Other: other}
}

// Marked is the actor, other than gpuops, whose mark the node bears, and
// the mark; "" when none.
func Marked(n *snapshot.Node) (actor, by string) {
	state := n.Labels[operand.UpgradeStateLabel]
	switch {
	case operand.UpgradeInProgress(state):
		// The controller holds the node from cordon-required until it
		// uncordons it (and keeps a failed one): whoever cordoned it.
		return UpgradeController, operand.UpgradeStateLabel + "=" + state
	case n.Cordon != nil && n.Cordon.Manager == operand.UpgradeManager && n.Unschedulable:
		return UpgradeController, n.Cordon.Manager
	}
	if _, ok := n.Annotations[operand.DriverManagerInitialState]; ok {
		return DriverManager, operand.DriverManagerInitialState
	}
	if n.Annotations[operand.NVSentinelHealthEvent] != "" {
		return NVSentinel, operand.NVSentinelHealthEvent
	}
	if n.Annotations[operand.NVSentinelAppliedTaints] != "" && !n.Unschedulable {
		return NVSentinel, operand.NVSentinelAppliedTaints
	}
	for k, v := range n.Labels {
		if operand.IsNVSentinelCordonLabel(k) && v == operand.NVSentinelName {
			return NVSentinel, k + "=" + v
		}
	}
	for _, k := range append([]string{operand.KuredUnschedulableBeforeDrain}, operand.KuredRebootInProgress...) {
		if _, ok := n.Annotations[k]; ok {
			return Kured, k
		}
	}
	return "", ""
}

// ByManager is the actor a field manager belongs to: the binaries of the
// actors (operand, outofservice.go), kubectl's managers for a person,
// Unknown for any other.
func ByManager(manager string) string {
	switch {
	case manager == operand.UpgradeManager:
		return UpgradeController
	case manager == operand.DriverUpgrade.Manager:
		return DriverManager
	case manager == operand.KuredManager:
		return Kured
	case manager == operand.QuarantineManager:
		return Gpuops
	case manager == operand.KubectlManager || strings.HasPrefix(manager, operand.KubectlManager+"-"):
		return Person
	}
	return Unknown
}

// Excluded reports whether a taint is not a node taken out of service: a
// PreferNoSchedule taint keeps nothing off; the node.kubernetes.io/ taints
// are the node lifecycle controller's, mirroring a condition (health judges
// NotReady) or the cordon itself (unschedulable); the cloud provider's
// uninitialized taint is the node's start; and nvidia.com/gpu is the taint
// that dedicates a node to GPU work, which GPU pods tolerate (the GPU
// Operator's docs taint GPU nodes with it).
func Excluded(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectPreferNoSchedule || strings.HasPrefix(t.Key, "node.kubernetes.io/") ||
		t.Key == "node.cloudprovider.kubernetes.io/uninitialized" || t.Key == snapshot.GPUResource
}

// Blocking are the taints that keep new work off the node, as key:effect.
func Blocking(taints []corev1.Taint) []string {
	var out []string
	for _, t := range taints {
		if !Excluded(t) {
			out = append(out, t.Key+":"+string(t.Effect))
		}
	}
	return out
}

// Record is gpuops's quarantine of a node, as its annotation holds it
// (operand.QuarantineAnnotation): why and since when.
type Record struct {
	Code    string    `json:"code"`
	Operand string    `json:"operand,omitempty"`
	Since   time.Time `json:"since"`
}

// CauseString is the cause as health prints it: the code, then the operand.
func (r Record) CauseString() string { return strings.TrimSpace(r.Code + " " + r.Operand) }

// Format is the annotation's value.
func (r Record) Format() string {
	r.Since = r.Since.UTC().Truncate(time.Second)
	b, _ := json.Marshal(r) // of strings and a time: it cannot fail
	return string(b)
}

// RecordOf reads gpuops's record of the node; false without one, or with
// one it cannot read (then it is not gpuops's to lift).
func RecordOf(n *snapshot.Node) (Record, bool) {
	v, ok := n.Annotations[operand.QuarantineAnnotation]
	if !ok {
		return Record{}, false
	}
	var r Record
	if err := json.Unmarshal([]byte(v), &r); err != nil || r.Code == "" {
		return Record{}, false
	}
	return r, true
}

// String is the entry in words, for --explain: "cordoned by person
// (kubectl-cordon) since 2026-12-04T10:00:00Z".
func (e *Entry) String() string {
	var what []string
	if e.Cordoned {
		what = append(what, "cordoned")
	}
	if len(e.Taints) > 0 {
		what = append(what, "tainted "+strings.Join(e.Taints, ","))
	}
	s := strings.Join(what, " and ") + " by " + e.Actor
	if e.By != "" {
		s += " (" + e.By + ")"
	}
	if e.Cause != "" {
		s += " for " + e.Cause
	}
	if e.Since != nil {
		s += " since " + e.Since.UTC().Format(time.RFC3339)
	}
	return s
}

// Count is how many of the entries each actor holds, every actor listed
// (zero for none).
func Count(entries []*Entry) map[string]int {
	out := make(map[string]int, len(Actors))
	for _, a := range Actors {
		out[a] = 0
	}
	for _, e := range entries {
		if e != nil {
			out[e.Actor]++
		}
	}
	return out
}

// Budget is the part of the driver upgrade policy's maxUnavailable the
// nodes out of service use: the upgrade controller counts every cordoned
// or NotReady node it manages against it, whatever the reason
// (k8s-operator-libs pkg/upgrade GetCurrentUnavailableNodes), so a node
// someone else cordoned delays the rollout as much as one it upgrades.
type Budget struct {
	MaxUnavailable int            `json:"maxUnavailable"`
	Used           int            `json:"used"`
	ByActor        map[string]int `json:"byActor"`
}

// BudgetOf is how much of maxUnavailable each actor eats: unavailable are
// the nodes the controller counts against it (upgrade.Budget.Unavailable),
// entries the ledger's by node. A node unavailable but not out of service
// (NotReady) counts as Unknown.
func BudgetOf(maxUnavailable int, unavailable []string, entries map[string]*Entry) Budget {
	b := Budget{MaxUnavailable: maxUnavailable, Used: len(unavailable), ByActor: Count(nil)}
	for _, n := range unavailable {
		actor := Unknown
		if e := entries[n]; e != nil {
			actor = e.Actor
		}
		b.ByActor[actor]++
	}
	return b
}

// Describe is a budget in words: "maxUnavailable 2: 1 by person, 1 by gpuops".
func (b Budget) Describe() string {
	var parts []string
	for _, a := range Actors {
		if n := b.ByActor[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d by %s", n, a))
		}
	}
	s := fmt.Sprintf("maxUnavailable %d, %d used", b.MaxUnavailable, b.Used)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}
