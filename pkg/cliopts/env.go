// Package cliopts holds the option groups gpuops's commands share, bound to
// their flags as kubectl's genericclioptions are: where a command writes
// and how it connects (Env), -o (Output), --lab and the namespace (Lab),
// a run across clusters (Clusters) and the judges' options (Judging).
// cmd/gpuops composes them into one Options struct per command. Flags are
// bound to fields (Destination); nothing here reads a flag by name.
package cliopts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/kube"
)

// Env is what every command starts from: where it writes, and the
// connection flags the app parses (before or after the command).
type Env struct {
	Out, ErrOut io.Writer
	Kube        *kube.Flags
}

// Connect builds API clients from the connection flags.
func (e Env) Connect() (*kube.Clients, error) { return kube.Connect(e.Kube) }

// ConnectWith connects and makes sure the caller may do what the command needs.
func (e Env) ConnectWith(ctx context.Context, needs []access.Need) (*kube.Clients, error) {
	cl, err := e.Connect()
	if err != nil {
		return nil, err
	}
	return cl, access.Check(ctx, cl.Kube.AuthorizationV1(), needs)
}

// ErrFinding is returned by a judging command whose result is "not good"
// (exit 1); its output already said why.
var ErrFinding = errors.New("finding")

// FindingIf is a judge's exit: ErrFinding when it found something.
func FindingIf(found bool) error {
	if found {
		return ErrFinding
	}
	return nil
}

// UsageError marks bad input (exit 2), pointing at --help.
func UsageError(err error) error { return fmt.Errorf("%w (see --help)", err) }

// CheckNodeName refuses a NODE argument that no node can be named, before
// it reaches an API path.
func CheckNodeName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return UsageError(fmt.Errorf("invalid node name %q: %s", name, strings.Join(errs, "; ")))
	}
	return nil
}
