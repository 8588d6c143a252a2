package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/words"
	"github.com/gpuops/gpuops/pkg/workspace"
)

type reportOptions struct {
	cliopts.Judging
	file string
}

func reportCommand(e cliopts.Env) *cli.Command {
	o := &reportOptions{Judging: cliopts.Judging{Env: e}}
	return command(&cli.Command{
		Name:  "report",
		Usage: "write the fleet as one self-contained HTML page: summary by pool, findings with reasons, node × operand grid",
		Description: "Writes one HTML file (--html FILE, or - for stdout) that needs nothing else: no network, no\n" +
			"other file; open it from disk, attach it to a ticket, print it. It holds the summary by group (as\n" +
			"gpuops summary, --group-by), every finding with its reason (as audit --explain), and a node × operand\n" +
			"grid of every node, grouped, the nodes with findings first, filterable by name, group and findings;\n" +
			"with the context, API server, namespace and time of the snapshot. Exit 1 if any node has a finding,\n" +
			"as gpuops summary (the file is written either way).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "html", Destination: &o.file, Usage: "write the HTML page to `FILE` (replaced atomically; - for stdout)"},
		}, append(o.FleetFlags(), o.LogsFlag())...),
	}, o)
}

func (o *reportOptions) Complete(c *cli.Context) error {
	if err := o.Judging.Complete(c); err != nil {
		return err
	}
	cliopts.FleetOptions(&o.Opts)
	return nil
}

func (o *reportOptions) Validate() error {
	if o.file == "" {
		return cliopts.UsageError(errors.New("--html FILE is required"))
	}
	return o.Judging.Validate()
}

// Run writes the page of the cluster, or of each cluster grouped by
// cluster, then by pool.
func (o *reportOptions) Run(ctx context.Context) error {
	r, cs, err := o.Judge(ctx)
	if err != nil {
		return err
	}
	var page bytes.Buffer
	var holds string
	if cs != nil {
		holds, err = report.ClustersHTML(&page, cs, report.Source{Namespace: o.Opts.Namespace, Selector: o.Opts.NodeSelector})
	} else {
		src := report.Source{Namespace: r.Namespace, Selector: r.Selector, Taken: r.Taken}
		src.Context, src.Server = o.Target()
		report.Printer{}.Notes(o.ErrOut, r)
		holds = fmt.Sprintf("%s, %s", words.Count(len(r.Fleet.Nodes), "node"), words.Count(r.Fleet.Findings(), "finding"))
		err = report.HTML(&page, *r.Fleet, r.Capacity, src)
	}
	if err != nil {
		return err
	}
	if err := o.write(page.Bytes(), holds); err != nil {
		return err
	}
	return cliopts.ExitOf(r, cs, (*outcome.Result).FleetFailed)
}

// write writes the page to the file (- for stdout), saying what it holds.
func (o *reportOptions) write(page []byte, holds string) error {
	if o.file == "-" {
		_, err := o.Out.Write(page)
		return err
	}
	if err := workspace.New(filepath.Dir(o.file)).WriteFile(filepath.Base(o.file), page, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "wrote %s: %s\n", o.file, holds)
	return nil
}
