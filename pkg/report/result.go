package report

import (
	"fmt"
	"io"

	"github.com/gpuops/gpuops/pkg/pipeline"
)

// Notes prints on w (stderr) what the pipeline says about its read and its
// roster, and the operands the ClusterPolicy switches off, when the output
// is for a person who asked why (--explain) or reads a table; the data
// formats carry them in their own fields, and the lab's exact lines come
// alone.
func (p Printer) Notes(w io.Writer, r *pipeline.Result) {
	if p.Format.Data() || p.Format == JUnit || p.Format == Name || p.Format == OpenReports || !(r.Explain || p.Format == Table || p.Format == Wide) {
		return
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	for _, d := range r.Disabled {
		fmt.Fprintf(w, "note: %s is off (%s): it is never missing, and the rules count it as the hosts'\n", d.Operand, d.Reason)
	}
}

// Result prints what a judge says of the result, in the printer's format,
// its notes on notes: audit's lines (with their reasons when explained),
// order-check's verdict of the one node judged, the matrix, the fleet
// summary, each node's health or the driver rollout.
func (p Printer) Result(w, notes io.Writer, r *pipeline.Result, view View) error {
	p.Notes(notes, r)
	if p.Format == OpenReports {
		return p.openReports(w, r, view)
	}
	switch view {
	case OrderView:
		v, err := r.Verdict(r.Node)
		if err != nil {
			return err
		}
		return p.Order(w, v.Order)
	case MatrixView:
		return p.Matrix(w, r.Matrix())
	case SummaryView:
		return p.Summary(w, *r.Fleet)
	case HealthView:
		return p.Health(w, r.Nodes, r.Explain)
	case UpgradesView:
		return p.Upgrades(w, r.Rollout, groupedOf(r.Fleet))
	}
	return p.Audit(w, r.Audits(), r.Why())
}

// View is which judge's verdict a Result prints.
type View int

// The views of a result.
const (
	AuditView View = iota
	OrderView
	MatrixView
	SummaryView
	HealthView
	UpgradesView
)
