// Package provision writes to the cluster for the commands that change it:
// it puts the lab of a lab spec onto a cluster and takes it off again (up,
// reset: the namespace, the node labels and the operand DaemonSets),
// switches an operand off or on for some nodes as pkg/plan planned it
// (optout, optin) and installs or removes the admission policy (guard.go),
// all written by server-side apply with one field manager, so the API
// server's ownership record says exactly what gpuops set and what others
// did.
//
// Every operation checks all it can before it changes anything: a bad node
// name, a foreign owner or an unusable namespace leaves the cluster and the
// workspace as they were.
package provision

import (
	"fmt"
	"io"
	"io/fs"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gpuops/gpuops/pkg/settle"
)

// FieldManager is the server-side apply field manager of everything gpuops writes.
const FieldManager = "gpuops"

// DefaultTimeout bounds each wait for DaemonSets to settle.
const DefaultTimeout = 2 * time.Minute

// Assets are the files Up renders and installs: a tree holding the
// kustomize bases (kustomize/operands/<operand>, see pkg/render) and one
// holding the standalone scripts it puts at the workspace's root. The
// binary passes what it embeds; a test can pass another catalog.
type Assets struct {
	Kustomize fs.FS
	Scripts   fs.FS
}

// Options are shared by the operations.
type Options struct {
	Force bool // take over fields that another field manager owns
	// BreakOrder lets an opt-out or opt-in through that breaks an order
	// rule, with a warning on Progress.
	BreakOrder bool
	Timeout    time.Duration // bound of each wait; DefaultTimeout if zero
	Progress   io.Writer     // progress of waits (stderr); nil for none
	// Changed is told of each object as the operation writes it (or finds
	// it unchanged), in order, so that it can be shown before the wait that
	// follows; nil for none.
	Changed func(ObjectChange)
}

// ObjectChange is what an operation did to one object, in kubectl's words.
type ObjectChange struct {
	Object string // as kubectl names it: node/lab-node-1, daemonset.apps/nvidia-driver-daemonset
	Action string // created, configured, unchanged, labelled, unlabelled, deleted or kept
	Why    string // why it was kept; empty otherwise
}

func (o Options) settle() settle.Options {
	t := o.Timeout
	if t == 0 {
		t = DefaultTimeout
	}
	return settle.Options{Timeout: t, Progress: o.Progress}
}

func (o Options) progressf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

func (o Options) changed(ch ObjectChange) {
	if o.Changed != nil {
		o.Changed(ch)
	}
}

// NodeNotFoundError is a node named by the lab spec or the command line that the cluster lacks.
type NodeNotFoundError struct{ Node string }

func (e *NodeNotFoundError) Error() string { return fmt.Sprintf("node %s not found", e.Node) }

// ForeignOwnerError refuses to write what another field manager owns.
type ForeignOwnerError struct {
	Object string // e.g. "node/lab-node-1", "daemonset.apps/gpu-operator/nvidia-driver-daemonset"
	Owners []Owner
	Detail string // the API server's conflict message, when it gave one
}

func (e *ForeignOwnerError) Error() string {
	who := e.Detail
	if who == "" {
		who = "owned by"
		for i, o := range e.Owners {
			if i > 0 {
				who += ","
			}
			who += " " + o.String()
		}
	}
	return fmt.Sprintf("%s: %s; not changed (--force takes it over)", e.Object, who)
}

func notFound(err error) bool { return apierrors.IsNotFound(err) }
