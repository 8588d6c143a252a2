package pipeline

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/health"
	"github.com/gpuops/gpuops/pkg/oneline"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/podlogs"
	"github.com/gpuops/gpuops/pkg/signature"
	"github.com/gpuops/gpuops/pkg/snapshot"
)

// MaxLogs is how many failing containers' logs one run reads at most: on a
// fleet where a fault took down hundreds of nodes alike, the first few
// name it, and the rest would only load the kubelets.
const MaxLogs = 64

// Failing is a failing container on an unusable node: whose log may name
// the host's fault.
type Failing struct {
	Node string
	podlogs.Container
	// Restarts is how many times the container has restarted: a container
	// that fails again is a new failure, whose log may say something new.
	Restarts int32
}

// FailingContainers are the containers whose logs --logs reads: on each
// unusable GPU node of the result, every pod of the namespace (the
// operands' and the validator's workload pods alike) whose worst container
// failed after it ran (health.LogOf), in node order.
func FailingContainers(s *snapshot.Snapshot, r *outcome.Result) []Failing {
	unusable := map[string]bool{}
	for _, v := range r.Nodes {
		if v.Health != nil && v.Health.Judged && !v.Health.Usable {
			unusable[v.Node] = true
		}
	}
	if len(unusable) == 0 {
		return nil
	}
	byNode := map[string][]Failing{}
	for _, p := range s.Pods {
		node := p.Placement()
		if !unusable[node] {
			continue
		}
		if previous, ok := health.LogOf(p.Health); ok {
			byNode[node] = append(byNode[node], Failing{Node: node, Restarts: p.Health.Restarts,
				Container: podlogs.Container{Namespace: s.Namespace, Pod: p.Name, Container: p.Health.Container, Previous: previous}})
		}
	}
	var out []Failing
	for _, v := range r.Nodes { // natural node order
		out = append(out, byNode[v.Node]...)
	}
	return out
}

// AddHints matches the logs read against the catalog and adds what they
// show to their nodes' health as hints; what could not be read is a note
// of the result (a missing right once, not once a container).
func AddHints(r *outcome.Result, fs []Failing, logs []podlogs.Log) {
	forbidden := false
	for i, l := range logs {
		switch {
		case l.Forbidden():
			if !forbidden {
				r.LogNotes = append(r.LogNotes, fmt.Sprintf("--logs: no right to read the logs of pods in namespace %s (get on pods/log): no hint names the host's fault", l.Namespace))
			}
			forbidden = true
		case l.Err != nil:
			r.LogNotes = append(r.LogNotes, fmt.Sprintf("--logs: the log of container %s of pod %s could not be read: %s", l.Container.Container, l.Pod, oneline.Error(l.Err)))
		default:
			found, ok := signature.Match(l.Text)
			if !ok {
				continue
			}
			if v, err := r.Verdict(fs[i].Node); err == nil && v.Health != nil {
				v.Health.Hints = append(v.Health.Hints, found.Hint(l.Pod, l.Container.Container, l.Previous))
			}
		}
	}
}

// readHints reads the logs of the result's failing containers, at most
// MaxLogs, and adds their hints.
func readHints(ctx context.Context, c kubernetes.Interface, s *snapshot.Snapshot, r *outcome.Result) {
	fs := FailingContainers(s, r)
	if len(fs) > MaxLogs {
		r.LogNotes = append(r.LogNotes, fmt.Sprintf("--logs: the logs of %d more failing containers were not read (at most %d a run)", len(fs)-MaxLogs, MaxLogs))
		fs = fs[:MaxLogs]
	}
	cs := make([]podlogs.Container, len(fs))
	for i, f := range fs {
		cs[i] = f.Container
	}
	AddHints(r, fs, podlogs.Read(ctx, c, cs))
}
