// Package openreports turns gpuops' verdicts into OpenReports ClusterReports
// (openreports.io/v1alpha1, github.com/openreports/reports-api), the API
// that Policy Reporter and Kyverno's UI read: a result per check gpuops
// makes, with the node (and a pod, where the verdict names one) as its
// resource. It is pure: verdicts in, objects out; pkg/report prints them
// and pkg/reportsync keeps them current in a cluster.
//
// The checks are the ones the judges already make, one result each, as
// -o junit lists them:
//
//   - policy audit, rule <operand>: a node asks for the operand (its deploy
//     label is "true"): pass when it runs there, fail when it is MISSING; a
//     helper's pause past --stuck-after fails too (STUCK). A deploy label
//     value that says more than yes or no (a pause within its time, a host
//     driver, an odd value; the rule is the label's operand, else its key)
//     and an operand pod on a node that asks for none (the pod is a
//     resource) are warn.
//   - policy order, rule <finding>: each start-up rule judged on the node
//     (device-plugin-without-toolkit, all of them with --all-rules): pass,
//     or fail when broken.
//   - policy health, rule usable (health, serve): fail when a GPU node
//     cannot run GPU work, with the root cause.
//   - policy upgrade, rule driver-upgrade (upgrades): pass when done, fail
//     when failed, stuck or left cordoned, warn while in progress, waiting
//     or outdated, skip when the node is skipped.
//
// So a fail is a finding: what makes the check's own command exit 1
// (audit for audit, order-check for order, health, upgrades), and a warn
// what it reports without failing. Every judge makes the audit and the
// order check of each node, so each command's reports hold both.
package openreports

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuops/gpuops/pkg/explain"
	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/upgrade"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/workload"
)

// Source is every report's and result's source, and ManagedBy the value of
// operand.ManagedByLabel on every report: what a cleanup selects on.
const (
	Source    = "gpuops"
	ManagedBy = "gpuops"
	// ClusterLabel names, on the reports of a named cluster (a kubeconfig
	// context), a form of its name fit for a label value; ClusterAnnotation
	// holds the name as it is. The reports of the cluster a serve runs in
	// have neither.
	ClusterLabel      = "gpuops.io/cluster"
	ClusterAnnotation = "gpuops.io/cluster"
	// Category is every result's category: Policy Reporter groups by it.
	Category = "GPU Operator"
)

// The policies, one per judge.
const (
	Audit   = "audit"
	Order   = "order"
	Health  = "health"
	Upgrade = "upgrade"
	// The rules of health and upgrade, one check per node, as -o junit
	// names health's.
	UsableRule  = "usable"
	UpgradeRule = "driver-upgrade"
)

// The outcomes of a result and the severities gpuops gives (the CRD's
// enums; the upstream module declares the types, not the values).
const (
	Pass  v1alpha1.Result = "pass"
	Fail  v1alpha1.Result = "fail"
	Warn  v1alpha1.Result = "warn"
	Error v1alpha1.Result = "error"
	Skip  v1alpha1.Result = "skip"

	High   v1alpha1.ResultSeverity = "high"
	Medium v1alpha1.ResultSeverity = "medium"
	Low    v1alpha1.ResultSeverity = "low"
)

// APIVersion and Kind of the objects, for printing them whole.
var APIVersion = v1alpha1.GroupVersion.String()

const Kind = "ClusterReport"

// Node is one node's results, and the bytes they take as JSON: what the
// choice between one report and one per node adds up.
type Node struct {
	Name    string
	Results []v1alpha1.ReportResult
	Bytes   int
}

// MaxBytes is the most JSON one report may hold before the results are
// split into a report per node. etcd refuses a request over 1.5 MiB
// (--max-request-bytes' default), and a report applied with kubectl apply
// carries a copy of itself in its last-applied-configuration annotation:
// 512 KiB stored twice, with metadata and managedFields, stays under 1.1
// MiB. A result takes 410 to 510 bytes (measured by TestSplitBySize: a lab
// node judged as serve does, explained, with health and every rule, has 10
// results in 4.1 KB when all runs, 5.0 KB when all is missing), so one
// report holds some 100 lab nodes (fewer of an install with more operands
// and rules); bigger clusters get a report per node, as Kyverno writes one per resource.
const MaxBytes = 512 << 10

// Nodes are the results of each node's verdict, in the order given, found
// at the time given. namespace is the operands' (their pods are resources).
func Nodes(verdicts []verdict.Verdict, namespace string, at time.Time) []Node {
	out := make([]Node, len(verdicts))
	for i := range verdicts {
		out[i] = NodeOf(&verdicts[i], namespace, at)
	}
	return out
}

// NodeOf is one node's results: its audit, order, health (when judged) and
// driver upgrade (when it takes part in the rollout), found at the time
// given. namespace is the operands' (their pods are resources).
func NodeOf(v *verdict.Verdict, namespace string, at time.Time) Node {
	b := builder{node: v.Node, ns: namespace, at: metav1.Timestamp{Seconds: at.Unix()}}
	b.audit(v)
	b.order(v)
	if v.GPU() {
		b.health(v.Health)
	}
	if v.Upgrade != nil {
		b.upgrade(v.Upgrade)
	}
	return Node{Name: v.Node, Results: b.out, Bytes: size(b.out)}
}

// Assemble makes the ClusterReports of the nodes' results: one for the
// cluster (named gpuops; with a cluster name, gpuops-<cluster>-<hash>), or
// one per node (<that>-<node>, its scope the node) when perNode (the
// command judged named nodes: order-check NODE, health NODE...) or the
// results pass maxBytes. Nodes without a result get no report of their
// own. cluster names the cluster when reports of several clusters go
// together (gpuops --contexts): it stamps the names and labels so they do
// not collide; empty for the one a command or serve runs against.
func Assemble(nodes []Node, cluster string, perNode bool, maxBytes int) []v1alpha1.ClusterReport {
	if !perNode {
		total := 0
		for _, n := range nodes {
			total += n.Bytes
		}
		if total <= maxBytes {
			var all []v1alpha1.ReportResult
			for _, n := range nodes {
				all = append(all, n.Results...)
			}
			return []v1alpha1.ClusterReport{report(Name(cluster, ""), cluster, nil, all)}
		}
	}
	var out []v1alpha1.ClusterReport
	for _, n := range nodes {
		if len(n.Results) > 0 {
			out = append(out, report(Name(cluster, n.Name), cluster, nodeRef(n.Name), n.Results))
		}
	}
	return out
}

// Found is when each of a node's results was found, by a hash of the
// result without its time: what the results judged next need of them to
// keep those times (Carry), in 8 bytes a result rather than the result
// (serve holds every node's: 16 bytes a result were 0.9 MB at 5,000 nodes).
// Two results of a node alike in 32 bits would only swap their times.
type Found []found

type found struct {
	key uint32
	at  uint32 // Unix seconds, up to 2106
}

// Carry keeps the times of f's results in next's that are the same but for
// the time: a result's time is when it was found, not when it was last
// judged again. It returns when next's results were found.
func (f Found) Carry(next []v1alpha1.ReportResult) Found {
	out := make(Found, len(next))
	for i := range next {
		k := hashOf(next[i])
		if j := slices.IndexFunc(f, func(x found) bool { return x.key == k }); j >= 0 {
			next[i].Timestamp = metav1.Timestamp{Seconds: int64(f[j].at)}
		}
		out[i] = found{k, uint32(next[i].Timestamp.Seconds)}
	}
	return out
}

func hashOf(r v1alpha1.ReportResult) uint32 {
	h := fnv.New32a()
	writeKey(json.NewEncoder(h), r)
	return h.Sum32()
}

// Same reports whether two reports say the same, timestamps aside: whether
// their Digests are equal.
func Same(a, b *v1alpha1.ClusterReport) bool {
	if len(a.Results) > 0 && len(a.Results) == len(b.Results) && &a.Results[0] == &b.Results[0] &&
		a.Name == b.Name && maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) && a.Source == b.Source &&
		a.Summary == b.Summary && slices.Equal(refs(a.Scope), refs(b.Scope)) {
		return true // the one node's results, unchanged (a report per node): no need to read them
	}
	return Digest(a) == Digest(b)
}

// Sum is a report's Digest: the first 128 bits of a SHA-256. serve keeps
// two a node at 5,000 nodes (what it makes, what the server holds), and the
// whole hash was 0.3 MB more.
type Sum [16]byte

// Digest is what a report says, timestamps aside, hashed: what a writer
// keeps of a report the server holds, to tell whether it must write it
// again, instead of the report itself (at 5,000 nodes, some 25 MB).
func Digest(r *v1alpha1.ClusterReport) Sum {
	h := sha256.New()
	// Encoded straight into the hash: serve digests every report it makes
	// and every one it lists, and a copy of each as JSON was most of what
	// its first batch allocated at 5,000 nodes (BenchmarkDigest).
	enc := json.NewEncoder(h)
	_ = enc.Encode(head(r)) // strings, maps and structs of them: never fails
	for i := range r.Results {
		writeKey(enc, r.Results[i])
	}
	return Sum(h.Sum(nil))
}

// head is what a Digest reads of a report besides its results. JSON of
// maps is in key order, so equal maps hash alike.
func head(r *v1alpha1.ClusterReport) any {
	return struct {
		Name        string
		Labels      map[string]string
		Annotations map[string]string
		Source      string
		Summary     v1alpha1.ReportSummary
		Scope       []corev1.ObjectReference
	}{r.Name, r.Labels, r.Annotations, r.Source, r.Summary, refs(r.Scope)}
}

func refs(r *corev1.ObjectReference) []corev1.ObjectReference {
	if r == nil {
		return nil
	}
	return []corev1.ObjectReference{*r}
}

// writeKey encodes a result without its timestamp, as JSON.
func writeKey(enc *json.Encoder, r v1alpha1.ReportResult) {
	r.Timestamp = metav1.Timestamp{}
	_ = enc.Encode(r) // a struct of strings, maps and slices: never fails
}

// size is the results' length as JSON, counted, not kept.
func size(rs []v1alpha1.ReportResult) int {
	var n counter
	_ = json.NewEncoder(&n).Encode(rs)
	return int(n) - 1 // Encode ends the value with a newline
}

type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// Summarize counts the results by outcome.
func Summarize(rs []v1alpha1.ReportResult) v1alpha1.ReportSummary {
	var s v1alpha1.ReportSummary
	for _, r := range rs {
		switch r.Result {
		case Pass:
			s.Pass++
		case Fail:
			s.Fail++
		case Warn:
			s.Warn++
		case Error:
			s.Error++
		case Skip:
			s.Skip++
		}
	}
	return s
}

func report(name, cluster string, scope *corev1.ObjectReference, results []v1alpha1.ReportResult) v1alpha1.ClusterReport {
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{operand.ManagedByLabel: ManagedBy}}
	if cluster != "" {
		meta.Labels[ClusterLabel] = clusterPart(cluster)
		meta.Annotations = map[string]string{ClusterAnnotation: cluster}
	}
	return v1alpha1.ClusterReport{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: meta, Source: Source, Scope: scope,
		Summary: Summarize(results), Results: results,
	}
}

func nodeRef(node string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node}
}

// builder collects one node's results.
type builder struct {
	node, ns string
	at       metav1.Timestamp
	out      []v1alpha1.ReportResult
}

func (b *builder) add(policy, rule string, sev v1alpha1.ResultSeverity, res v1alpha1.Result, msg string, props map[string]string, pod string) {
	subjects := []corev1.ObjectReference{*nodeRef(b.node)}
	if pod != "" {
		subjects = append(subjects, *podRef(b.ns, pod))
	}
	b.out = append(b.out, result(policy, rule, sev, res, msg, props, subjects, b.at))
}

// result is one result, its empty properties left out.
func result(policy, rule string, sev v1alpha1.ResultSeverity, res v1alpha1.Result, msg string, props map[string]string,
	subjects []corev1.ObjectReference, at metav1.Timestamp) v1alpha1.ReportResult {
	for k, v := range props {
		if v == "" {
			delete(props, k)
		}
	}
	if len(props) == 0 {
		props = nil
	}
	return v1alpha1.ReportResult{
		Source: Source, Policy: policy, Rule: rule, Category: Category, Severity: sev, Timestamp: at,
		Result: res, Scored: res == Pass || res == Fail,
		Subjects: subjects, Description: msg, Properties: props,
	}
}

func podRef(namespace, name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: name}
}

// Severities. An operand without which no GPU container starts on the node
// is high when missing; the others (feature discovery, monitoring, MIG)
// medium. Label warnings and unexpected pods are low.
var chain = []string{operand.Driver, operand.ContainerToolkit, operand.OperatorValidator, operand.DevicePlugin,
	operand.VGPUManager, operand.DRADriver}

func auditSeverity(op string) v1alpha1.ResultSeverity {
	if slices.Contains(chain, op) {
		return High
	}
	return Medium
}

func (b *builder) audit(v *verdict.Verdict) {
	missing := map[string][]explain.Reason{}
	for _, m := range v.Why().Missing {
		missing[m.Operand] = m.Reasons
	}
	for _, op := range v.Audit.Asked {
		props := map[string]string{"operand": op, "label": operand.LabelPrefix + op, "value": "true"}
		if !slices.Contains(v.Audit.Missing, op) {
			b.add(Audit, op, auditSeverity(op), Pass, op+" runs on the node", props, "")
			continue
		}
		props["reason"] = "missing"
		msg := "MISSING " + op
		if rs := missing[op]; len(rs) > 0 {
			codes, msgs := make([]string, len(rs)), make([]string, len(rs))
			for i, r := range rs {
				codes[i], msgs[i] = r.Code, r.Message
			}
			props["codes"] = strings.Join(codes, ",")
			msg += ": " + strings.Join(msgs, "; ")
		}
		b.add(Audit, op, auditSeverity(op), Fail, msg, props, "")
	}
	for _, op := range v.Audit.Stuck {
		props := map[string]string{"operand": op, "label": operand.LabelPrefix + op, "reason": "stuck"}
		msg := "STUCK " + op
		for _, w := range v.Why().Warnings {
			if w.Stuck && w.Operand == op {
				maps.Copy(props, warningProps(w))
				msg += ": " + w.Message
			}
		}
		b.add(Audit, op, auditSeverity(op), Fail, msg, props, "")
	}
	for _, w := range v.Why().Warnings {
		if w.Stuck { // said once, as STUCK
			continue
		}
		rule := w.Operand
		if rule == "" {
			rule = w.Label
		}
		b.add(Audit, rule, Low, Warn, w.Message, warningProps(w), "")
	}
	for _, u := range v.Why().Unexpected {
		b.add(Audit, u.Operand, Low, Warn, u.Message,
			map[string]string{"operand": u.Operand, "reason": explain.UnexpectedOperand, "label": operand.OperandsLabel, "value": "false"}, u.Pod)
	}
}

func warningProps(w explain.Warning) map[string]string {
	p := map[string]string{"operand": w.Operand, "label": w.Label, "value": w.Value, "code": w.Code, "by": w.By, "progress": w.Progress}
	if w.Since != nil {
		p["since"] = w.Since.UTC().Format(time.RFC3339)
	}
	return p
}

func (b *builder) order(v *verdict.Verdict) {
	for _, r := range v.Order.Rules {
		props := map[string]string{"operand": r.Operand, "needs": r.Needs}
		if !slices.Contains(v.Order.Findings, r.Finding) {
			b.add(Order, r.Finding, High, Pass, fmt.Sprintf("no %s pod runs here without a %s pod", r.Operand, r.Needs), props, "")
			continue
		}
		why := explain.Order(r)
		props["reason"] = why.Code
		b.add(Order, r.Finding, High, Fail, why.Message, props, "")
	}
}

func (b *builder) health(h *health.Node) {
	if h.Usable {
		b.add(Health, UsableRule, High, Pass, "the node can run GPU work", nil, "")
		return
	}
	props := map[string]string{"code": h.Cause.Code, "operand": h.Cause.Operand, "blocked": strings.Join(h.Blocked, ",")}
	var also []string
	for _, c := range h.Also {
		also = append(also, c.Code+" "+c.Operand)
	}
	props["also"] = strings.Join(also, ",")
	props["evidence"] = strings.Join(h.Evidence, "; ")
	var hints []string // the host's faults the failing containers' logs name (health --logs)
	for _, x := range h.Hints {
		hints = append(hints, fmt.Sprintf("%s: %s; remedy: %s", x.Code, x.Cause, x.Remedy))
	}
	if len(hints) > 0 {
		props["hint"] = strings.Join(hints, "; ")
	}
	b.add(Health, UsableRule, High, Fail, h.Cause.Message, props, "")
}

// upgradeResults maps the upgrade verdicts to outcomes: done passes; what
// gpuops upgrades exits 1 on fails; a node on its way warns; skipped skips.
var upgradeResults = map[string]v1alpha1.Result{
	upgrade.Done: Pass, upgrade.Failed: Fail, upgrade.Stuck: Fail,
	upgrade.LeftCordoned: Fail, upgrade.InProgress: Warn, upgrade.Waiting: Warn,
	upgrade.Outdated: Warn, upgrade.Skipped: Skip,
}

func (b *builder) upgrade(u *upgrade.Node) {
	res, ok := upgradeResults[u.Verdict]
	if !ok {
		res = Error // a verdict this package does not know yet
	}
	props := map[string]string{"verdict": u.Verdict, "state": u.State, "pool": u.Pool}
	if u.Since != nil {
		props["since"] = u.Since.UTC().Format(time.RFC3339)
	}
	msg := "driver upgrade " + u.Verdict
	if u.Cause != "" {
		msg += ": " + u.Cause
	}
	b.add(Upgrade, UpgradeRule, Medium, res, msg, props, "")
}

// The policy of gpuops pods and its one rule: a GPU pod runs as asked.
// Each GPU pod judged is a result, its subject the pod (and the node it is
// bound to): pass when it runs, warn while it waits (Pending for less than
// --stuck-after: not a finding yet), fail when it is stuck or refused (what
// makes gpuops pods exit 1), with its code, state and the health cause it
// carries as properties.
const (
	Pods        = "pods"
	RunningRule = "running"
)

// PodResults are the results of gpuops pods, found at the time given: each
// answer, then a pass for each GPU pod running as asked (namespace/name).
func PodResults(answers []workload.Answer, running []string, at time.Time) []v1alpha1.ReportResult {
	ts := metav1.Timestamp{Seconds: at.Unix()}
	out := make([]v1alpha1.ReportResult, 0, len(answers)+len(running))
	for _, a := range answers {
		res := Fail
		if !a.Finding() {
			res = Warn
		}
		props := map[string]string{"code": a.Code, "state": a.State, "node": a.Node, "owner": a.Owner, "said": a.Said}
		if a.Health != nil {
			props["health"] = strings.TrimSpace(a.Health.Code + " " + a.Health.Operand)
		}
		out = append(out, result(Pods, RunningRule, podSeverity(a.Code), res, a.State+" "+a.Message, props, podSubjects(a.Pod, a.Node), ts))
	}
	for _, p := range running {
		out = append(out, result(Pods, RunningRule, Low, Pass, "the GPU pod runs as asked", nil, podSubjects(p, ""), ts))
	}
	return out
}

// podSeverity follows the headline's precedence (workload.Codes): the GPU
// stack's codes high, what a person set (cordon, taint, selector) medium,
// capacity and the scheduler's own reasons low — a fleet merely full is
// no incident.
func podSeverity(code string) v1alpha1.ResultSeverity {
	switch i := slices.Index(workload.Codes, code); {
	case i >= 0 && i < slices.Index(workload.Codes, workload.Cordoned):
		return High
	case i >= 0 && i < slices.Index(workload.Codes, workload.GPUsUnhealthy):
		return Medium
	}
	return Low
}

func podSubjects(pod, node string) []corev1.ObjectReference {
	ns, name, _ := strings.Cut(pod, "/")
	out := []corev1.ObjectReference{*podRef(ns, name)}
	if node != "" {
		out = append(out, *nodeRef(node))
	}
	return out
}

// PodReports are the ClusterReports of gpuops pods' results: one, named
// gpuops-pods (gpuops-<cluster>-<hash>-pods for a named cluster), or, when
// the results pass maxBytes, as many as hold them, numbered (gpuops-pods-1,
// gpuops-pods-2, ...). An empty cluster has one report with no result:
// applied, it says that no GPU pod is stuck.
func PodReports(results []v1alpha1.ReportResult, cluster string, maxBytes int) []v1alpha1.ClusterReport {
	if size(results) <= maxBytes {
		return []v1alpha1.ClusterReport{report(Name(cluster, Pods), cluster, nil, results)}
	}
	var out []v1alpha1.ClusterReport
	for start := 0; start < len(results); {
		end, bytes := start, 0
		for end < len(results) && (end == start || bytes+size(results[end:end+1]) <= maxBytes) {
			bytes += size(results[end : end+1])
			end++
		}
		out = append(out, report(Name(cluster, fmt.Sprintf("%s-%d", Pods, len(out)+1)), cluster, nil, results[start:end]))
		start = end
	}
	return out
}
