// Package clusters judges many kubeconfig contexts in one run (--contexts,
// --all-contexts, --context-match): each with its own connection (its own
// auth and API server; each request bounded by --request-timeout) and its
// own result from pipeline.Run (its own ClusterPolicy and roster), at most
// --parallel at once. One cluster's failure never stops the others: it is
// that cluster's error entry, an outcome.Cluster as its result is
// (pkg/report prints every cluster's part).
package clusters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
)

// DefaultParallel is how many clusters are judged at once unless --parallel
// says otherwise: enough to hide one slow API server behind the others,
// few enough for a laptop's connections and memory (each cluster's read is
// held until it is printed).
const DefaultParallel = 4

// Run is a run across clusters: the contexts, and how many at once.
type Run struct {
	Targets  []Target
	Parallel int
}

// Selection is which contexts of the kubeconfig a run judges, as the flags
// give it.
type Selection struct {
	Names    []string // --contexts, in the order given
	All      bool     // --all-contexts
	Match    string   // --context-match: a regular expression the names must match
	Parallel int      // --parallel
}

// Active reports whether the flags ask for a run across clusters.
func (s Selection) Active() bool { return len(s.Names) > 0 || s.All || s.Match != "" }

// Target is one context to judge.
type Target struct {
	Context string
	Server  string      // its API server's URL, as the kubeconfig says
	Flags   *kube.Flags // the run's connection flags, with --context this one
}

// Resolve checks the selection against the connection flags and the
// kubeconfig, reading no cluster: the contexts named must exist, the
// expression must compile and match one, --parallel must be at least 1,
// and no flag may name a single cluster beside them. Every error is bad
// input. The targets come in the order given, or in name order for
// --all-contexts and --context-match alone.
func Resolve(f *kube.Flags, s Selection) ([]Target, error) {
	if !s.Active() {
		return nil, errors.New("--parallel needs --contexts, --all-contexts or --context-match")
	}
	if s.Parallel < 1 {
		return nil, fmt.Errorf("--parallel: want at least 1, got %d", s.Parallel)
	}
	if len(s.Names) > 0 && s.All {
		return nil, errors.New("--contexts and --all-contexts: give one of them")
	}
	for _, one := range []struct {
		flag  string
		value *string
	}{{"context", f.Context}, {"cluster", f.ClusterName}, {"server", f.APIServer}} {
		if one.value != nil && *one.value != "" {
			return nil, fmt.Errorf("--%s names one cluster: it does not go with --contexts, --all-contexts or --context-match", one.flag)
		}
	}
	var match *regexp.Regexp
	if s.Match != "" {
		var err error
		if match, err = regexp.Compile(s.Match); err != nil {
			return nil, fmt.Errorf("--context-match: %w", err)
		}
	}
	known, err := f.Contexts()
	if err != nil {
		return nil, err
	}
	names := slices.Clone(known) // filtered below; known is quoted in errors
	if len(s.Names) > 0 {
		names = nil
		for _, n := range s.Names {
			switch {
			case n == "":
				return nil, errors.New("--contexts: an empty context name")
			case !slices.Contains(known, n):
				return nil, fmt.Errorf("--contexts: context %q does not exist in the kubeconfig (it has %s)", n, strings.Join(known, ", "))
			case !slices.Contains(names, n):
				names = append(names, n)
			}
		}
	}
	if match != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return !match.MatchString(n) })
		if len(names) == 0 {
			return nil, fmt.Errorf("--context-match: no context matches %q (the kubeconfig has %s)", s.Match, strings.Join(known, ", "))
		}
	}
	if len(names) == 0 {
		return nil, errors.New("--all-contexts: the kubeconfig has no context")
	}
	targets := make([]Target, len(names))
	for i, n := range names {
		tf := f.ForContext(n)
		_, server := tf.Target()
		targets[i] = Target{Context: n, Server: server, Flags: tf}
	}
	return targets, nil
}

// quietUpTo is how many clusters a run judges without progress lines: a
// handful comes back before anyone wonders.
const quietUpTo = 3

// Judge judges every target with opts, at most r.Parallel at once, and
// returns each one's result or error in the targets' order. With more than
// a few targets it writes a line to progress (stderr) as each one is done.
// With opts.Node, a cluster without that node is an error too.
func (r *Run) Judge(ctx context.Context, progress io.Writer, opts pipeline.Options) []outcome.Cluster {
	targets := r.Targets
	out := make([]outcome.Cluster, len(targets))
	var g errgroup.Group
	g.SetLimit(r.Parallel)
	var mu sync.Mutex
	done := 0
	for i, t := range targets {
		g.Go(func() error {
			start := time.Now()
			out[i] = judge(ctx, t, opts)
			if len(targets) > quietUpTo {
				mu.Lock()
				done++
				status := "ok"
				if out[i].Err != nil {
					status = "error"
				}
				fmt.Fprintf(progress, "contexts: %d/%d judged (%s: %s in %s)\n", done, len(targets), t.Context, status, time.Since(start).Round(time.Millisecond))
				mu.Unlock()
			}
			return nil // a cluster's error is its entry; it stops no other
		})
	}
	_ = g.Wait()
	return out
}

func judge(ctx context.Context, t Target, opts pipeline.Options) outcome.Cluster {
	c := outcome.Cluster{Context: t.Context, Server: t.Server}
	reader, err := kube.ConnectReading(t.Flags)
	if err == nil {
		c.Result, err = pipeline.Run(ctx, reader, opts)
	}
	if err == nil && opts.Node != "" {
		_, err = c.Result.Verdict(opts.Node)
	}
	if err != nil {
		c.Result, c.Err = nil, err
	}
	return c
}

// AnyFailed is what a run's outcome comes to: its error when a cluster
// could not be judged (exit 2: such a cluster is never counted as healthy),
// naming each one; else whether failed says a cluster's result is a
// finding.
func AnyFailed(cs []outcome.Cluster, failed func(*outcome.Result) bool) (bool, error) {
	var notJudged []string
	for _, c := range cs {
		if c.Err != nil {
			notJudged = append(notJudged, c.Context+": "+c.ErrorLine())
		}
	}
	if notJudged != nil {
		return false, fmt.Errorf("%d of %d contexts could not be judged: %s", len(notJudged), len(cs), strings.Join(notJudged, "; "))
	}
	return slices.ContainsFunc(cs, func(c outcome.Cluster) bool { return failed(c.Result) }), nil
}
