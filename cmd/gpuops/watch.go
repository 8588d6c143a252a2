package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/live"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/verdict"
)

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "audit, order-check and matrix that keep going: the verdict, then every change (Ctrl-C ends it)",
		Description: "First the current verdict of every node: its audit lines (\"<node> OK\" or \"<node> MISSING\n" +
			"<operand>\" per missing operand) and its order lines (\"<node> ok\" or \"<node> <finding>\" per\n" +
			"broken rule); then, as kubectl get -w does, the lines of each node whose verdict changes, and\n" +
			"\"<node> DELETED\" for a node gone. Only the nodes an event touches are judged again.\n" +
			"-o wide puts the time in front of each line, -o json prints one JSON object per change (-o yaml\n" +
			"one YAML document), -o table a node × operand table (redrawn in place on a terminal). Ctrl-C\n" +
			"ends it with exit 0.",
		Flags: []cli.Flag{
			&formatFlag{StringFlag: &cli.StringFlag{
				Name: "output", Aliases: []string{"o"}, Value: string(report.Text),
				Usage: "output format: text (audit and order-check lines), wide (text with a timestamp), json (one object a line)\n" +
					"or yaml (one document each), or table (redrawn in place on a terminal)",
			}, extra: []report.Format{report.Wide}},
			selectorFlag(), explainFlag(), discoverFlag(), allRulesFlag(), stuckAfterFlag(),
		},
		Action: func(c *cli.Context) error {
			defaultGC()
			f, err := report.ParseFormat(c.String("output"), extraFormats(c.Command)...)
			if err != nil {
				return usageError(err)
			}
			opts, err := liveOptions(c)
			if err != nil {
				return err
			}
			opts.Explain = c.Bool("explain") || f.Data()
			j, cl, err := newLiveJudge(c, opts, true)
			if err != nil {
				return err
			}
			// The informers retry a refused connection quietly (the server may
			// be restarting): ask once, so that a person hears it at once.
			if _, err := cl.Kube.Discovery().ServerVersion(); err != nil {
				return err
			}
			terminal := report.ColorFor(c.App.Writer)
			out := report.Printer{Format: f, Color: f == report.Table && terminal}.Watch(c.App.Writer, c.Bool("explain"), f == report.Table && terminal)
			ctx, stop := context.WithCancel(c.Context)
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
						fmt.Fprintf(c.App.ErrWriter, "%s: %s; retrying\n", resource, oneLine(err))
					}
				},
			})
			if err := j.Run(ctx); err != nil {
				return err
			}
			return printErr // Ctrl-C is not an error
		},
	}
}

// liveOptions reads the flags that say what the live judge judges: the
// one-shot judges' flags, read the same way.
func liveOptions(c *cli.Context) (live.Options, error) {
	f, err := readJudgeFlags(c)
	return live.Options{Options: f.opts}, err
}

// newLiveJudge connects and sets up the live judge of the namespace.
func newLiveJudge(c *cli.Context, opts live.Options, personWaits bool) (*live.Judge, *kube.Clients, error) {
	cl, err := connect(c)
	if err != nil {
		return nil, nil, err
	}
	j, err := live.NewFor(cl, opts, personWaits)
	return j, cl, err
}
