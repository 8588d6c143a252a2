package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuops/gpuops/pkg/guard"
	"github.com/gpuops/gpuops/pkg/provision"
)

// Changes returns what provision.Options.Changed wants: a func that prints
// each change on w as it happens, one line as kubectl prints it
// ("node/lab-node-1 labelled", "daemonset.apps/x kept: also managed by …").
// As kubectl's, these lines are best effort: a failed write stops no
// operation half way.
func Changes(w io.Writer) func(provision.ObjectChange) {
	return func(ch provision.ObjectChange) {
		line := ch.Object + " " + ch.Action
		if ch.Why != "" {
			line += ": " + ch.Why
		}
		fmt.Fprintln(w, line)
	}
}

// GuardObjects prints the guard's policy and binding as one YAML stream,
// what guard install --dry-run would apply.
func GuardObjects(w io.Writer, objs *guard.Objects) error {
	_, err := fmt.Fprintf(w, "%s---\n%s", objs.PolicyYAML, objs.BindingYAML)
	return err
}

// GuardEnforcement prints how the API server took the guard just installed.
func GuardEnforcement(w io.Writer, e *provision.GuardEnforcement) error {
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
func (p Printer) Relabelled(w io.Writer, r *provision.Result, dryRun bool) error {
	if dryRun {
		if err := p.Plan(w, r.Plan); err != nil || p.Format != Text {
			return err
		}
		_, err := fmt.Fprintf(w, "server dry run: the API server accepts the labels of %d node(s); nothing changed\n", len(r.Plan.Steps[len(r.Plan.Steps)-1].Nodes))
		return err
	}
	var b strings.Builder
	for _, ch := range r.Changes {
		fmt.Fprintf(&b, "daemonset.apps/%s desiredNumberScheduled %s -> %s\n", ch.DaemonSet, ch.Before, ch.After)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
