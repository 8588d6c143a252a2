package report

import (
	"fmt"
	"io"

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
