package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/verdict"
	"github.com/gpuops/gpuops/pkg/words"
)

type watchOptions struct {
	cliopts.Judging
	cliopts.Output
}

func watchCommand(e cliopts.Env) *cli.Command {
	o := &watchOptions{Judging: cliopts.Judging{Env: e}, Output: cliopts.Output{
		Formats: slices.Concat(report.Formats, []report.Format{report.Wide}), Value: string(report.Text),
		Usage: "output format: text (audit and order-check lines), wide (text with a timestamp), json (one object a line)\n" +
			"or yaml (one document each), or table (redrawn in place on a terminal)",
	}}
	return command(&cli.Command{
		Name:  "watch",
		Usage: "audit, order-check and matrix that keep going: the verdict, then every change (Ctrl-C ends it)",
		Description: "First the current verdict of every node: its audit lines (\"<node> OK\" or \"<node> MISSING\n" +
			"<operand>\" per missing operand) and its order lines (\"<node> ok\" or \"<node> <finding>\" per\n" +
			"broken rule); then, as kubectl get -w does, the lines of each node whose verdict changes, and\n" +
			"\"<node> DELETED\" for a node gone. Only the nodes an event touches are judged again.\n" +
			"-o wide puts the time in front of each line, -o json prints one JSON object per change (-o yaml\n" +
			"one YAML document), -o table a node × operand table (redrawn in place on a terminal). Ctrl-C\n" +
			"ends it with exit 0.",
		Flags: []cli.Flag{o.Flag(), o.SelectorFlag(), o.ExplainFlag(), o.DiscoverFlag(), o.AllRulesFlag(), o.StuckAfterFlag()},
	}, o)
}

func (o *watchOptions) Complete(*cli.Context) error {
	if err := o.CompleteWith(&o.Output); err != nil {
		return err
	}
	o.Opts.Explain = o.Explain || o.Format().Data()
	return nil
}

func (o *watchOptions) Validate() error { return o.Judging.Validate() }

func (o *watchOptions) Run(ctx context.Context) error {
	j, cl, err := newTracker(&o.Judging, live.Options{Options: o.Opts}, true)
	if err != nil {
		return err
	}
	// The informers retry a refused connection quietly (the server may
	// be restarting): ask once, so that a person hears it at once.
	if _, err := cl.Kube.Discovery().ServerVersion(); err != nil {
		return err
	}
	f := o.Format()
	redraw := f == report.Table && report.ColorFor(o.Out)
	out := report.Printer{Format: f, Color: redraw}.Watch(o.Out, o.Explain, redraw)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var printErr error // set in Run's own goroutine
	j.Observe(live.Hooks{
		Judged: func(b verdict.Batch) {
			if err := out.Batch(b); err != nil && printErr == nil {
				printErr = err
				stop()
			}
		},
		WatchFailed: func(resource live.Resource, err error) {
			if j.Ready() {
				fmt.Fprintf(o.ErrOut, "%s: %s; retrying\n", resource, words.ErrorLine(err))
			}
		},
	})
	if err := j.Run(ctx); err != nil {
		return err
	}
	return printErr // Ctrl-C is not an error
}

// newTracker connects and sets up the live tracker of the namespace.
func newTracker(j *cliopts.Judging, opts live.Options, personWaits bool) (*live.Tracker, *kube.Clients, error) {
	cl, err := j.Connect()
	if err != nil {
		return nil, nil, err
	}
	lj, err := live.NewFor(cl, opts, personWaits)
	return lj, cl, err
}
