package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write the fleet as one self-contained HTML page: summary by pool, findings with reasons, node × operand grid",
		Description: "Writes one HTML file (--html FILE, or - for stdout) that needs nothing else: no network, no\n" +
			"other file; open it from disk, attach it to a ticket, print it. It holds the summary by group (as\n" +
			"gpuops summary, --group-by), every finding with its reason (as audit --explain), and a node × operand\n" +
			"grid of every node, grouped, the nodes with findings first, filterable by name, group and findings;\n" +
			"with the context, API server, namespace and time of the snapshot. Exit 1 if any node has a finding,\n" +
			"as gpuops summary (the file is written either way).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "html", Usage: "write the HTML page to `FILE` (replaced atomically; - for stdout)"},
		}, fleetFlags()...),
		Action: func(c *cli.Context) error {
			file := c.String("html")
			if file == "" {
				return usageError(errors.New("--html FILE is required"))
			}
			f, err := readJudgeFlags(c)
			if err != nil {
				return err
			}
			fleetOptions(&f)
			if f.clusters != nil {
				return reportClusters(c, f, file)
			}
			r, err := judge(c, f)
			if err != nil {
				return err
			}
			src := report.Source{Namespace: r.Namespace, Selector: r.Selector, Taken: r.Taken}
			src.Context, src.Server = configFlags(c).Target()
			f.printer.Notes(c.App.ErrWriter, r)
			var page bytes.Buffer
			if err := report.HTML(&page, *r.Fleet, src); err != nil {
				return err
			}
			if err := writePage(c, file, page.Bytes(), fmt.Sprintf("%d nodes, %d findings", len(r.Fleet.Nodes), r.Fleet.Findings())); err != nil {
				return err
			}
			return findingIf(r.Fleet.Findings() > 0)
		},
	}
}

// reportClusters is report --html across clusters: one page, grouped by
// cluster, then by pool.
func reportClusters(c *cli.Context, f judgeFlags, file string) error {
	cs := f.clusters.Judge(c.Context, c.App.ErrWriter, f.opts)
	var page bytes.Buffer
	holds, err := report.ClustersHTML(&page, cs, report.Source{Namespace: f.opts.Namespace, Selector: f.opts.NodeSelector})
	if err != nil {
		return err
	}
	if err := writePage(c, file, page.Bytes(), holds); err != nil {
		return err
	}
	return clustersExit(cs, func(r *outcome.Result) bool { return r.Fleet.Findings() > 0 })
}

// writePage writes the page to file (- for stdout), saying what it holds.
func writePage(c *cli.Context, file string, page []byte, holds string) error {
	if file == "-" {
		_, err := c.App.Writer.Write(page)
		return err
	}
	if err := workspace.New(filepath.Dir(file)).WriteFile(filepath.Base(file), page, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %s\n", file, holds)
	return nil
}
