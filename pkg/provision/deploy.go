package provision

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/plan"
	"github.com/gpuops/gpuops/pkg/settle"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// Relabel is an opt-out or an opt-in: one operand's deploy label on some
// nodes, and with Mode the operands that order brings along.
type Relabel struct {
	Operand  string
	On       bool
	Nodes    []string // the nodes by name, or
	Selector string   // a label selector that picks them
	Mode     plan.Mode
	// MaxUnavailable is how many nodes go through all the steps at a time;
	// 0 takes every node at once.
	MaxUnavailable int
	// DryRun plans and sends every node's labels with server-side dry run,
	// and changes nothing.
	DryRun bool
}

// Relabelled is what a relabelling planned and did.
type Relabelled struct {
	Plan *plan.Plan
	// Changes are the plan's DaemonSets' desiredNumberScheduled, read once
	// settled before the first write and after the last; none on a dry run.
	Changes []plan.Count
}

// OptOut sets the operand's deploy label to "false" (SPEC step 5) and writes
// out/optout.txt with the desired counts of the operand's own DaemonSet.
func OptOut(ctx context.Context, c kubernetes.Interface, ns string, ws workspace.Workspace, r Relabel, opts Options) (*Relabelled, error) {
	r.On = false
	res, err := SetDeploy(ctx, c, ns, r, opts)
	if err != nil || r.DryRun {
		return res, err
	}
	o, _ := operand.Lookup(operand.Lab, r.Operand) // SetDeploy found it
	i := slices.IndexFunc(res.Changes, func(ch plan.Count) bool { return ch.DaemonSet == o.DaemonSet })
	if err := ws.WriteOut(workspace.OptOutFile, OptOutText(res.Changes[i])); err != nil {
		return nil, err
	}
	return res, nil
}

// OptIn sets the operand's deploy label to "true" (SPEC step 7).
func OptIn(ctx context.Context, c kubernetes.Interface, ns string, r Relabel, opts Options) (*Relabelled, error) {
	r.On = true
	return SetDeploy(ctx, c, ns, r, opts)
}

// SetDeploy plans the relabelling from the node list, refuses a plan that
// breaks an order rule (unless opts.BreakOrder), has the API server check
// every node's final labels in a server-side dry run, then does the plan's
// steps with server-side apply as gpuops, all the nodes of a batch at once,
// waiting after each step until its DaemonSets have settled. Each apply
// carries every other label gpuops owns on the node unchanged, as
// server-side apply removes what an applier stops sending. Nothing is
// written before every check has passed.
func SetDeploy(ctx context.Context, c kubernetes.Interface, ns string, r Relabel, opts Options) (*Relabelled, error) {
	o, err := operand.Lookup(operand.Lab, r.Operand)
	if err != nil {
		return nil, err
	}
	var nodes []*corev1.Node
	byName := map[string]*corev1.Node{}
	err = eachNode(ctx, c, func(n *corev1.Node) error {
		nodes = append(nodes, n)
		byName[n.Name] = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	targets, err := pick(nodes, byName, r)
	if err != nil {
		return nil, err
	}
	dss, err := c.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list DaemonSets in %s: %w", ns, err)
	}
	daemonSets := make([]*appsv1.DaemonSet, len(dss.Items))
	for i := range dss.Items {
		daemonSets[i] = &dss.Items[i]
	}
	if !slices.ContainsFunc(daemonSets, func(d *appsv1.DaemonSet) bool { return d.Name == o.DaemonSet }) {
		return nil, fmt.Errorf("DaemonSet %s/%s not found (gpuops up creates it)", ns, o.DaemonSet)
	}

	p, err := plan.Make(plan.Request{Operand: o.Name, On: r.On, Nodes: targets, Mode: r.Mode}, nodes, daemonSets, operand.Real, operand.AllRules)
	if err != nil {
		return nil, err
	}
	res := &Relabelled{Plan: p}
	if err := p.Refusal(); err != nil {
		if !opts.BreakOrder {
			return res, err
		}
		opts.progressf("warning: %s; changing it anyway", err)
	}
	writes, err := nodeWrites(byName, p, opts.Force)
	if err != nil {
		return res, err
	}
	// All or nothing: the API server judges every node's final labels
	// (admission, the guard among it; rights; field ownership) before any is
	// written.
	err = forEach(ctx, len(targets), func(ctx context.Context, i int) error {
		return writes[targets[i]].apply(ctx, c, len(p.Steps)-1, dryRun(applyOptions(opts.Force)))
	})
	if err != nil || r.DryRun {
		return res, err
	}

	names := planDaemonSets(p)
	before, err := settledDesired(ctx, c, ns, names, opts)
	if err != nil {
		return res, err
	}
	for _, batch := range batches(targets, r.MaxUnavailable) {
		for step, s := range p.Steps {
			if err := writeStep(ctx, c, batch, writes, step, opts); err != nil {
				return res, err
			}
			if err := waitSettled(ctx, c, ns, stepDaemonSets(p, s), opts); err != nil {
				return res, err
			}
		}
	}
	after, err := settledDesired(ctx, c, ns, names, opts)
	if err != nil {
		return res, err
	}
	for i, name := range names {
		res.Changes = append(res.Changes, plan.Count{DaemonSet: name, Before: before[i], After: after[i]})
	}
	return res, nil
}

// pick resolves the nodes a relabelling names, in the order given, or those
// its selector picks, in natural order.
func pick(nodes []*corev1.Node, byName map[string]*corev1.Node, r Relabel) ([]string, error) {
	if r.Selector == "" {
		for _, n := range r.Nodes {
			if byName[n] == nil {
				return nil, &NodeNotFoundError{Node: n}
			}
		}
		return r.Nodes, nil
	}
	sel, err := labels.Parse(r.Selector)
	if err != nil {
		return nil, fmt.Errorf("--selector: %w", err)
	}
	var out []string
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node matches the selector %q", r.Selector)
	}
	slices.SortFunc(out, judge.NaturalCompare)
	return out, nil
}

// nodeWrite is what gpuops applies to one node at each step.
type nodeWrite struct {
	name            string
	resourceVersion string
	// labels[i] is the whole label set gpuops applies at step i: what it owns
	// already, with the plan's labels of steps 0..i on top.
	labels  []map[string]string
	inStep  []bool            // whether step i writes any of the plan's labels here
	planned map[string]string // the plan's labels, every step's
}

// nodeWrites works out each node's applies, refusing labels another field
// manager owns unless force.
func nodeWrites(byName map[string]*corev1.Node, p *plan.Plan, force bool) (map[string]*nodeWrite, error) {
	out := map[string]*nodeWrite{}
	for i, s := range p.Steps {
		for _, nl := range s.Nodes {
			w := out[nl.Node]
			if w == nil {
				node := byName[nl.Node]
				mine, err := corev1ac.ExtractNode(node, FieldManager)
				if err != nil {
					return nil, fmt.Errorf("node %s: %w", node.Name, err)
				}
				base := maps.Clone(mine.Labels)
				if base == nil {
					base = map[string]string{}
				}
				w = &nodeWrite{name: node.Name, resourceVersion: node.ResourceVersion,
					labels: make([]map[string]string, len(p.Steps)), inStep: make([]bool, len(p.Steps)), planned: map[string]string{}}
				for j := range w.labels {
					w.labels[j] = maps.Clone(base)
				}
				out[nl.Node] = w
			}
			for j := i; j < len(p.Steps); j++ {
				maps.Copy(w.labels[j], nl.Labels)
			}
			maps.Copy(w.planned, nl.Labels)
			w.inStep[i] = true
		}
	}
	if force {
		return out, nil
	}
	for _, w := range out {
		if err := checkLabelOwners(byName[w.name], w.planned); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (w *nodeWrite) apply(ctx context.Context, c kubernetes.Interface, step int, o metav1.ApplyOptions) error {
	after, err := c.CoreV1().Nodes().Apply(ctx, corev1ac.Node(w.name).WithLabels(w.labels[step]), o)
	if err != nil {
		return fmt.Errorf("label node %s: %w", w.name, err)
	}
	if len(o.DryRun) == 0 {
		w.resourceVersion = after.ResourceVersion
	}
	return nil
}

// writeStep applies one step to the batch's nodes it concerns, at once, and
// tells of them in the batch's order.
func writeStep(ctx context.Context, c kubernetes.Interface, batch []string, writes map[string]*nodeWrite, step int, opts Options) error {
	done := make([]string, len(batch))
	err := forEach(ctx, len(batch), func(ctx context.Context, i int) error {
		w := writes[batch[i]]
		if w == nil || !w.inStep[step] {
			return nil
		}
		rv := w.resourceVersion
		if err := w.apply(ctx, c, step, applyOptions(opts.Force)); err != nil {
			return err
		}
		done[i] = change(rv, w.resourceVersion, "labelled")
		return nil
	})
	for i, d := range done {
		if d != "" {
			opts.changed(ObjectChange{Object: "node/" + batch[i], Action: d})
		}
	}
	return err
}

// batches cuts the nodes into groups of at most n, n <= 0 being all of them.
func batches(nodes []string, n int) [][]string {
	if n <= 0 || n >= len(nodes) {
		return [][]string{nodes}
	}
	return slices.Collect(slices.Chunk(nodes, n))
}

// planDaemonSets are the DaemonSets of the plan, in its order.
func planDaemonSets(p *plan.Plan) []string {
	var out []string
	for _, d := range p.DaemonSets {
		out = append(out, d.DaemonSet)
	}
	return out
}

// stepDaemonSets are the DaemonSets of the step's operands.
func stepDaemonSets(p *plan.Plan, s plan.Step) []string {
	var out []string
	for _, d := range p.DaemonSets {
		if slices.Contains(s.Operands, d.Operand) {
			out = append(out, d.DaemonSet)
		}
	}
	return out
}

// settledDesired waits for the DaemonSets to settle, then reads each one's
// desiredNumberScheduled.
func settledDesired(ctx context.Context, c kubernetes.Interface, ns string, names []string, opts Options) ([]string, error) {
	if err := waitSettled(ctx, c, ns, names, opts); err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, name := range names {
		ds, err := c.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read DaemonSet %s/%s: %w", ns, name, err)
		}
		out[i] = strconv.Itoa(int(ds.Status.DesiredNumberScheduled))
	}
	return out, nil
}

// waitSettled waits until the DaemonSets have settled; none is nothing to wait for.
func waitSettled(ctx context.Context, c kubernetes.Interface, ns string, names []string, opts Options) error {
	if len(names) == 0 {
		return nil
	}
	_, err := settle.Wait(ctx, c, ns, names, opts.settle())
	return err
}
