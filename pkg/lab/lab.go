// Package lab runs the whole lab of a lab spec (pkg/labspec), the steps 1
// to 8 of docs/lab.md in order, against a cluster, and leaves the workspace
// complete: k8s/, out/ and the scripts. Provisioning is pkg/provision's, judging pkg/pipeline's, the files'
// format pkg/report's; this package only puts them in the lab's order.
package lab

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// Run runs the lab and returns the matrix of step 8, as out/matrix.txt
// holds it. Progress, if not nil,
// gets one line per step besides the waits' progress.
func Run(ctx context.Context, c kubernetes.Interface, lab *labspec.Lab, assets provision.Assets, ws workspace.Workspace, opts provision.Options) ([]byte, error) {
	step := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "lab: "+format+"\n", args...)
		}
	}
	step("steps 1-4: namespace %s, node labels, operand DaemonSets", lab.Namespace)
	if _, err := provision.Up(ctx, c, lab, assets, ws, opts); err != nil {
		return nil, err
	}
	if t := lab.OptOut; t != nil {
		step("step 5: %s opts out of %s", t.Node, t.Operand)
		if _, err := provision.OptOut(ctx, c, lab.Namespace, ws, provision.Relabel{Operand: t.Operand, Nodes: []string{t.Node}}, opts); err != nil {
			return nil, err
		}
	}

	// The lab's judges: its five operands and the device rule, as the
	// lab's scripts judge.
	judging := pipeline.Options{Namespace: lab.Namespace, Roster: pipeline.LabRoster}
	step("step 6: audit")
	r, err := pipeline.Run(ctx, c, judging)
	if err != nil {
		return nil, err
	}
	if err := ws.WriteOut(workspace.AuditFile, report.LabAudit(r)); err != nil {
		return nil, err
	}

	if t := lab.OptIn; t != nil {
		// The lab's step 7 may break the start-up order on purpose (the
		// device plugin on a node without the toolkit), for the order check
		// to find: it takes the force path past the plan's refusal.
		step("step 7: %s opts in to %s (forced: the order check is to judge what it leaves)", t.Node, t.Operand)
		forced := opts
		forced.BreakOrder = true
		if _, err := provision.OptIn(ctx, c, lab.Namespace, provision.Relabel{Operand: t.Operand, Nodes: []string{t.Node}}, forced); err != nil {
			return nil, err
		}
	}
	step("steps 7-8: order check of the lab's nodes, matrix")
	if r, err = pipeline.Run(ctx, c, judging); err != nil {
		return nil, err
	}
	names := make([]string, len(lab.Nodes))
	for i, n := range lab.Nodes {
		names[i] = n.Name
	}
	order, err := report.LabOrder(r, names)
	if err != nil {
		return nil, err
	}
	if err := ws.WriteOut(workspace.OrderFile, order); err != nil {
		return nil, err
	}
	m := report.LabMatrix(r)
	return m, ws.WriteOut(workspace.MatrixFile, m)
}
