package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/verdict"
)

type watchOptions struct {
	judging
	output
}

func watchCommand(e env) *cli.Command {
	o := &watchOptions{judging: judging{env: e}, output: output{
		formats: slices.Concat(report.Formats, []report.Format{report.Wide}), value: string(report.Text),
		usage: "output format: text (audit and order-check lines), wide (text with a timestamp), json (one object a line)\n" +
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
		Flags: []cli.Flag{o.flag(), o.selectorFlag(), o.explainFlag(), o.discoverFlag(), o.allRulesFlag(), o.stuckAfterFlag()},
	}, o)
}

func (o *watchOptions) Validate() error {
	if err := o.validate(&o.output); err != nil {
		return err
	}
	o.opts.Explain = o.explain || o.format().Data()
	return nil
}

func (o *watchOptions) Run(ctx context.Context) error {
	defaultGC()
	j, cl, err := o.newTracker(live.Options{Options: o.opts}, true)
	if err != nil {
		return err
	}
	// The informers retry a refused connection quietly (the server may
	// be restarting): ask once, so that a person hears it at once.
	if _, err := cl.Kube.Discovery().ServerVersion(); err != nil {
		return err
	}
	f := o.format()
	redraw := f == report.Table && report.ColorFor(o.out)
	out := report.Printer{Format: f, Color: redraw}.Watch(o.out, o.explain, redraw)
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
		WatchFailed: func(resource string, err error) {
			if j.Ready() {
				fmt.Fprintf(o.errOut, "%s: %s; retrying\n", resource, oneLine(err))
			}
		},
	})
	if err := j.Run(ctx); err != nil {
		return err
	}
	return printErr // Ctrl-C is not an error
}

// newTracker connects and sets up the live tracker of the namespace.
func (j *judging) newTracker(opts live.Options, personWaits bool) (*live.Tracker, *kube.Clients, error) {
	cl, err := j.connect()
	if err != nil {
		return nil, nil, err
	}
	lj, err := live.NewFor(cl, opts, personWaits)
	return lj, cl, err
}
