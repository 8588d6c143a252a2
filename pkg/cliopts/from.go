package cliopts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/bundle"
	"github.com/gpuops/gpuops/pkg/kube"
)

// From is --from and --now: a judge reads a bundle (gpuops collect) or
// any `kubectl get -o yaml|json` output instead of the cluster, served to
// the same reader as the API server serves it (pkg/bundle), so that its
// verdicts are the live ones of the same objects. No kubeconfig is read.
type From struct {
	Path string
	now  string
	// In is read for --from -; nil: stdin.
	In io.Reader

	input  *bundle.Bundle
	server *bundle.Server
	at     time.Time
}

// fromCategory groups the flags in --help.
const fromCategory = "Without the cluster"

func (f *From) Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "from", Category: fromCategory, Destination: &f.Path,
			Usage: "judge what `FILE|DIR|-` holds instead of the cluster: a gpuops collect bundle, any kubectl get -o yaml|json\n" +
				"output (a List or a stream of documents), a folder of them (must-gather's included), - for stdin; gzip when\n" +
				"the name ends in .gz. What a judge needs and the input lacks is said (see --explain); no verdict: exit 2"},
		&cli.StringFlag{Name: "now", Category: fromCategory, Destination: &f.now,
			Usage: "with --from, judge as of this RFC 3339 `TIME` (ages, --stuck-after) (default: the bundle's time, else the clock's)"},
	}
}

// Set reports whether --from was given.
func (f *From) Set() bool { return f.Path != "" }

// Complete reads the input: a bad one is an error (exit 2) before anything
// is judged or written.
func (f *From) Complete() error {
	if !f.Set() {
		return nil
	}
	in := f.In
	if in == nil {
		in = os.Stdin
	}
	b, err := bundle.Load(f.Path, in)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	f.input, f.server = b, bundle.NewServer(b)
	return nil
}

// Namespace is the GPU Operator's namespace the input's header names, or "".
func (f *From) Namespace() string {
	if f.input == nil || f.input.Header == nil {
		return ""
	}
	return f.input.Header.Namespace
}

// fill settles the moment to judge as of (--now, else the header's time),
// refusing a bad --now and what cannot go with --from.
func (f *From) fill(contexts bool, logs bool) error {
	if !f.Set() {
		if f.now != "" {
			return errors.New("--now: only with --from")
		}
		return nil
	}
	switch {
	case contexts:
		return errors.New("--from judges one input: not with --contexts, --all-contexts or --context-match")
	case logs:
		return errors.New("--logs reads the containers' logs from the cluster: not with --from")
	}
	f.at = time.Time{}
	if f.input.Header != nil {
		f.at = f.input.Header.Time
	}
	if f.now != "" {
		t, err := time.Parse(time.RFC3339, f.now)
		if err != nil {
			return fmt.Errorf("--now %q: want an RFC 3339 time such as 2026-12-07T13:00:00Z", f.now)
		}
		f.at = t
	}
	return nil
}

// target is the cluster the header names, else the input's name: a
// kubectl output, or a redacted bundle, does not name it.
func (f *From) target() (context, server string) {
	if h := f.input.Header; h != nil && h.Context != "" {
		return h.Context, h.Server
	}
	if f.Path == "-" {
		return "stdin", ""
	}
	return filepath.Base(f.Path), ""
}

// reader is the client the judges read the input through.
func (f *From) reader() (kubernetes.Interface, error) { return kube.InProcess(f.server) }

// done turns what the input lacked into what the user reads: an error
// the reader failed on for it names the input (nothing judged: exit 2); what
// it went on without is one line each on errOut (the notes of --explain
// say what each leaves unjudged).
func (f *From) done(err error, errOut io.Writer) error {
	if err != nil {
		if bundle.IsNotHeld(err) {
			return fmt.Errorf("--from %s: %w: no verdict can be given without it", f.Path, err)
		}
		return err
	}
	for _, m := range f.server.Missing() {
		fmt.Fprintf(errOut, "note: --from %s holds no %s: the verdicts that need it are not given (see --explain)\n", f.Path, m)
	}
	if f.input.WithoutManagedFields() {
		fmt.Fprintf(errOut, "note: --from %s holds no managedFields of nodes (kubectl get hides them without --show-managed-fields): how long a label has been held (a pause STUCK) and who took a node out of service are not judged\n", f.Path)
	}
	return nil
}
