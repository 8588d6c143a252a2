package health

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
	"github.com/gpuops/gpuops/pkg/words"
)

// What the kubelet reports besides the pods' states (snapshot/kubelet.go)
// moves a verdict two ways: a sandbox the runtime cannot create names the
// container toolkit, one step before the pods that show it; and the
// validator's workload pod refused a device on a node whose devices other
// pods hold all is the check's artefact, not the node's fault.

// kubelet is the snapshot's reports of the kubelet, for the chain.
type kubelet struct {
	warnings map[string][]snapshot.Warning
	holders  map[string]snapshot.Holders
	refused  map[string]*snapshot.Pod // by node: its latest refused plugin workload pod
	logged   map[string][]signature.Hint
	// failedPlugin are, by node, the pods the kubelet refused there because
	// the device plugin failed to allocate (RejectedPod.PluginFailed).
	failedPlugin map[string][]snapshot.RejectedPod
}

func newKubelet(s *snapshot.Snapshot) kubelet {
	k := kubelet{warnings: s.Warnings, holders: s.Holders, logged: s.Logged}
	for _, r := range s.Rejected {
		if r.Node == "" || !r.PluginFailed() {
			continue
		}
		if k.failedPlugin == nil {
			k.failedPlugin = map[string][]snapshot.RejectedPod{}
		}
		k.failedPlugin[r.Node] = append(k.failedPlugin[r.Node], r)
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		if _, ok := p.RefusedDevice(); !ok || !p.IsPluginWorkload() || p.Node == "" {
			continue
		}
		if k.refused == nil {
			k.refused = map[string]*snapshot.Pod{}
		}
		// The validator deletes its last workload pod before it makes the
		// next; should two stand, the later name is as good as any.
		if prev := k.refused[p.Node]; prev == nil || p.Name > prev.Name {
			k.refused[p.Node] = p
		}
	}
	return k
}

// runtime fails the container toolkit when the container runtime says it
// has no runtime for the handler of the pods' RuntimeClass (nvidia): the
// toolkit writes that runtime into the runtime's config, so with its pod
// running the config was never written, or was rewritten under it
// (NVIDIA/gpu-operator#598). The operands whose pods cannot get a sandbox
// wait behind it (blockers), whatever init container they show.
func (c chain) runtime(links []link) {
	t := c.index(operand.ContainerToolkit)
	if t < 0 {
		return
	}
	var pods []string
	var handler string
	var seen snapshot.Warning
	for i := range links {
		l := &links[i]
		if l.pod == nil || l.code == "" {
			continue
		}
		if h, w, ok := snapshot.MissingRuntime(c.kubelet.warnings[l.pod.Name]); ok {
			pods = append(pods, l.pod.Name)
			if handler == "" {
				handler, seen = h, w
			}
		}
	}
	tk := &links[t]
	if len(pods) == 0 || tk.code != "" {
		return // no such report; or the toolkit fails already, the cause either way
	}
	where := "the toolkit's pod runs"
	if !tk.asked {
		where = "the node runs no toolkit pod (the host's toolkit configures the runtime)"
	}
	msg := fmt.Sprintf("the container runtime has no runtime %q configured, which the container toolkit writes into its config: %s, yet %s cannot get a sandbox",
		handler, where, strings.Join(pods, ", "))
	tk.fail(RuntimeNotConfigured, msg, warningText(seen))
}

// sandboxBlocked reports whether the link's pod cannot get a sandbox for
// want of a runtime: it waits on the toolkit.
func (c chain) sandboxBlocked(l *link) bool {
	if l.pod == nil {
		return false
	}
	_, _, ok := snapshot.MissingRuntime(c.kubelet.warnings[l.pod.Name])
	return ok
}

// RetryWithin bounds how long after the kubelet refused the validator's
// workload pod the validator makes it again: its wait for the pod to
// succeed (60 tries 5 s apart, NVIDIA/gpu-operator v26.7.0
// cmd/nvidia-validator/main.go, podCreationWaitRetries), then the
// kubelet's longest back-off before it runs the failed init container
// again (kubernetes v1.37.2 pkg/kubelet/apis/config/v1beta1/defaults.go,
// MaxContainerBackOff).
const RetryWithin = 5*time.Minute + 300*time.Second

// full clears the operator validator's failure when it is only that its
// plugin-validation's workload pod was refused a device (the validator
// retries it until it gets one, NVIDIA/gpu-operator#233, #481) because the
// node had none free: the node is full, not broken. The kubelet refuses so
// only when every device it can allocate is in use; the pods on the node
// must request them all still, or the refusal be recent enough that the
// validator has not tried again (RetryWithin): a GPU freed since is taken
// at its next try. It returns the note that says so; nil when the rule
// does not apply, or cannot be told (the holders were not read).
func (c chain) full(links []link, n snapshot.Node, now time.Time) *Cause {
	v := c.index(operand.OperatorValidator)
	refused := c.kubelet.refused[n.Name]
	if v < 0 || refused == nil {
		return nil
	}
	l := &links[v]
	if l.code == "" || l.pause != nil || l.pod == nil || !inPluginValidation(l.pod.Health) {
		return nil
	}
	resource, _ := refused.RefusedDevice()
	allocatable := n.Devices[resource].Allocatable
	held, read := c.kubelet.holders[n.Name]
	if !read || allocatable == 0 {
		return nil
	}
	inUse, at := held.Devices[resource], refused.Health.Started
	holders := "none"
	if len(held.Pods) > 0 {
		holders = strings.Join(held.Pods, ", ")
	}
	var msg string
	switch {
	case inUse >= allocatable:
		msg = fmt.Sprintf("the validator's workload pod %s was refused a %s: the pods on the node request %d of its %d allocatable (%s); %s waits in plugin-validation until one is free",
			refused.Name, resource, inUse, allocatable, holders, l.pod.Name)
	case !at.IsZero() && now.Sub(at) <= RetryWithin:
		msg = fmt.Sprintf("the validator's workload pod %s was refused a %s %s ago, none free; the pods on the node request %d of its %d allocatable now (%s): %s tries again within %s of the refusal",
			refused.Name, resource, age(now, at), inUse, allocatable, holders, l.pod.Name, RetryWithin)
	default:
		return nil
	}
	note := &Cause{Code: GPUsAllInUse, Operand: operand.OperatorValidator, Message: msg}
	l.code, l.message, l.evidence = "", "", ""
	return note
}

// AdmissionWithin bounds how long ago the kubelet refused a pod for a
// device plugin's failure for the refusal to count: a workload's
// controller makes its pod again within it, the Job controller at its
// longest back-off (kubernetes v1.37.2 pkg/controller/job/job_controller.go,
// MaxJobPodFailureBackOff), a ReplicaSet at once. A refusal older than
// that, with none since, is not known to last.
const AdmissionWithin = 10 * time.Minute

// admission fails the ready device plugin when the kubelet refused a pod
// on the node at admission because the plugin's Allocate or
// GetPreferredAllocation failed (NVIDIA/k8s-device-plugin#231: a GPU lost,
// which NVML cannot open, while the node still advertises it): the node
// takes no GPU pod though it looks whole. Only a refusal since the plugin's
// pod became Ready (a plugin restarted since, as after the reboot that
// recovers a lost GPU, may serve again) and within AdmissionWithin counts;
// a refusal for want of a free device never does (a full node is not a
// broken one).
func (c chain) admission(links []link, n snapshot.Node, now time.Time) {
	i := c.index(operand.DevicePlugin)
	if i < 0 || !links[i].asked || links[i].code != "" || links[i].pod == nil {
		return
	}
	l := &links[i]
	var last *snapshot.RejectedPod
	for j, r := range c.kubelet.failedPlugin[n.Name] {
		if r.At.IsZero() || now.Sub(r.At) > AdmissionWithin || r.At.Before(l.pod.Health.ReadySince) {
			continue
		}
		if last == nil || r.At.After(last.At) {
			last = &c.kubelet.failedPlugin[n.Name][j]
		}
	}
	if last == nil {
		return
	}
	l.fail(GPUsUnhealthy, fmt.Sprintf("the kubelet refused pod %s/%s at admission %s ago: the device plugin failed to allocate its GPU, though the node advertises it",
		last.Namespace, last.Name, age(now, last.At)),
		fmt.Sprintf("pod %s/%s refused UnexpectedAdmissionError: %s", last.Namespace, last.Name, words.Line(last.Message)))
}

// inPluginValidation reports whether the validator's pod is held in, or
// failing in, its plugin-validation init container.
func inPluginValidation(h snapshot.PodHealth) bool {
	const step = "plugin-validation"
	return h.Init == step || h.Container == step
}

// kubeletEvidence is what the kubelet reports of the link's pod besides its
// state: the worst container's termination message, the pod's Warning
// Events (but one its reason says already) and, for the operator
// validator, its workload pod refused at admission.
func (c chain) kubeletEvidence(l *link, node string) []string {
	p := l.pod
	var out []string
	if m := strings.TrimSpace(p.Health.Message); m != "" {
		out = append(out, fmt.Sprintf("container %s terminated with message %q", p.Health.Container, words.Line(m)))
	}
	for _, w := range c.kubelet.warnings[p.Name] {
		// The scheduler's FailedScheduling says what the pod's condition
		// says, in its reason already.
		if m := words.Line(w.Message); m != "" && !strings.Contains(p.Reason, m) {
			out = append(out, warningText(w))
		}
	}
	if w := c.kubelet.refused[node]; w != nil && l.op.Name == operand.OperatorValidator {
		out = append(out, fmt.Sprintf("workload pod %s %s: %s", w.Name, w.Phase, words.Line(w.Reason)))
	}
	return out
}

// reportedHints are the host faults the kubelet's reports of the link's
// pod name (pkg/signature): the worst container's termination message and
// the pod's Warning Events, then its containers' logs when they were read
// (health --logs), each fault once.
func (c chain) reportedHints(l *link) []signature.Hint {
	p := l.pod
	var out []signature.Hint
	add := func(h signature.Hint) {
		if !slices.ContainsFunc(out, func(o signature.Hint) bool { return o.Code == h.Code }) {
			out = append(out, h)
		}
	}
	if f, ok := signature.Match(p.Health.Message); ok {
		add(f.Hint(signature.FromMessage, p.Name, p.Health.Container, false))
	}
	for _, w := range c.kubelet.warnings[p.Name] {
		if f, ok := signature.Match(w.Message); ok {
			add(f.Hint(signature.FromEvent, p.Name, "", false))
		}
	}
	for _, h := range c.kubelet.logged[p.Name] {
		add(h)
	}
	return out
}

func warningText(w snapshot.Warning) string {
	s := "Warning " + w.Reason
	if w.Count > 1 {
		s += fmt.Sprintf(" (x%d)", w.Count)
	}
	return s + ": " + words.Line(w.Message)
}
