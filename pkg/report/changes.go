package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/plan"
)

// Change prints what an operation did to one object as it happens, one
// line as kubectl prints it ("node/lab-node-1 labelled",
// "daemonset.apps/x kept: also managed by …"; why is empty but for kept).
// As kubectl's, these lines are best effort: a failed write stops no
// operation half way.
func Change(w io.Writer, object, action, why string) {
	line := object + " " + action
	if why != "" {
		line += ": " + why
	}
	fmt.Fprintln(w, line)
}

// GuardObjects prints the guard's policy and binding as one YAML stream,
// what guard install --dry-run would apply.
func GuardObjects(w io.Writer, objs *guard.Objects) error {
	_, err := fmt.Fprintf(w, "%s---\n%s", objs.PolicyYAML, objs.BindingYAML)
	return err
}

// GuardEnforcement prints how the API server took the guard just installed.
func GuardEnforcement(w io.Writer, e *guard.Enforcement) error {
	var err error
	if e.Exempt != "" {
		_, err = fmt.Fprintf(w, "guard: not probed: you (%s) are exempt from it\n", e.Exempt)
	} else {
		_, err = fmt.Fprintf(w, "guard: enforced, mode %s\n", e.Mode)
	}
	return err
}

// GuardUninstalled prints, when there was no guard to uninstall, that it
// was not installed; the deletions themselves are changes.
func GuardUninstalled(w io.Writer, installed bool) error {
	if installed {
		return nil
	}
	_, err := io.WriteString(w, "guard: not installed\n")
	return err
}

// Relabelled prints what an opt-out or opt-in did: on a dry run its plan
// (and, in text, that the API server accepted the labels), else each
// DaemonSet's desiredNumberScheduled before and after, kubectl-style.
func (p Printer) Relabelled(w io.Writer, pl *plan.Plan, counts []plan.Count, dryRun bool) error {
	if dryRun {
		if err := p.Plan(w, pl); err != nil || p.Format != Text {
			return err
		}
		_, err := fmt.Fprintf(w, "server dry run: the API server accepts the labels of %d node(s); nothing changed\n", len(pl.Steps[len(pl.Steps)-1].Nodes))
		return err
	}
	var b strings.Builder
	for _, ch := range counts {
		fmt.Fprintf(&b, "daemonset.apps/%s desiredNumberScheduled %s -> %s\n", ch.DaemonSet, ch.Before, ch.After)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
