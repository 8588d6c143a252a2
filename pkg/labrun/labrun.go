// Package labrun runs the whole lab of a lab spec, the steps 1 to 8 of docs/lab.md in order,
// against a cluster, and leaves the workspace complete: k8s/, out/ and the
// scripts. Provisioning is pkg/provision's, judging pkg/pipeline's; this package
// only puts them in the lab's order and writes the judges' files.
package labrun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/judge"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// text prints the judges' files in the lab's exact format.
var text = report.Printer{Format: report.Text}

// Run runs the lab and returns the matrix of step 8. Progress, if not nil,
// gets one line per step besides the waits' progress.
func Run(ctx context.Context, c kubernetes.Interface, lab *labspec.Lab, assets provision.Assets, ws workspace.Workspace, opts provision.Options) (judge.Matrix, error) {
	step := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "lab: "+format+"\n", args...)
		}
	}
	step("steps 1-4: namespace %s, node labels, operand DaemonSets", lab.Namespace)
	if _, err := provision.Up(ctx, c, lab, assets, ws, opts); err != nil {
		return judge.Matrix{}, err
	}
	if t := lab.OptOut; t != nil {
		step("step 5: %s opts out of %s", t.Node, t.Operand)
		if _, err := provision.OptOut(ctx, c, lab.Namespace, ws, provision.Relabel{Operand: t.Operand, Nodes: []string{t.Node}}, opts); err != nil {
			return judge.Matrix{}, err
		}
	}

	// The lab's judges: its five operands and the device rule, as the
	// lab's scripts judge.
	judging := pipeline.Options{Namespace: lab.Namespace, Roster: pipeline.LabRoster}
	step("step 6: audit")
	r, err := pipeline.Run(ctx, c, judging)
	if err != nil {
		return judge.Matrix{}, err
	}
	if err := writeOut(ws, workspace.AuditFile, func(w io.Writer) error { return text.Audit(w, r.Audits(), nil) }); err != nil {
		return judge.Matrix{}, err
	}

	if t := lab.OptIn; t != nil {
		// The lab's step 7 may break the start-up order on purpose (the
		// device plugin on a node without the toolkit), for the order check
		// to find: it takes the force path past the plan's refusal.
		step("step 7: %s opts in to %s (forced: the order check is to judge what it leaves)", t.Node, t.Operand)
		forced := opts
		forced.BreakOrder = true
		if _, err := provision.OptIn(ctx, c, lab.Namespace, provision.Relabel{Operand: t.Operand, Nodes: []string{t.Node}}, forced); err != nil {
			return judge.Matrix{}, err
		}
	}
	step("steps 7-8: order check of the lab's nodes, matrix")
	if r, err = pipeline.Run(ctx, c, judging); err != nil {
		return judge.Matrix{}, err
	}
	order, err := OrderText(r, lab)
	if err != nil {
		return judge.Matrix{}, err
	}
	if err := ws.WriteOut(workspace.OrderFile, order); err != nil {
		return judge.Matrix{}, err
	}
	m := r.Matrix()
	if err := writeOut(ws, workspace.MatrixFile, func(w io.Writer) error { return text.Matrix(w, m) }); err != nil {
		return judge.Matrix{}, err
	}
	return m, nil
}

// OrderText is out/order.txt: "<node> <verdict>" for every node of the lab
// spec, in natural name order.
func OrderText(r *pipeline.Result, lab *labspec.Lab) ([]byte, error) {
	names := make([]string, len(lab.Nodes))
	for i, n := range lab.Nodes {
		names[i] = n.Name
	}
	slices.SortFunc(names, judge.NaturalCompare)
	verdicts := make([]judge.OrderVerdict, len(names))
	for i, n := range names {
		v, err := r.Verdict(n)
		if err != nil {
			return nil, err
		}
		verdicts[i] = v.Order
	}
	var b bytes.Buffer
	err := report.OrderLines(&b, verdicts)
	return b.Bytes(), err
}

func writeOut(ws workspace.Workspace, name string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	return ws.WriteOut(name, b.Bytes())
}
