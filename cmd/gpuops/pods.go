package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workload"
)

type podsOptions struct {
	workloadOptions
	podSelector string
}

func podsCommand(e cliopts.Env) *cli.Command {
	o := &podsOptions{workloadOptions: workloadOptions{Judging: cliopts.Judging{Env: e}, Output: cliopts.PlainOutput("the pods", report.JUnit, report.OpenReports)}}
	return command(&cli.Command{
		Name:  "pods",
		Usage: "every GPU pod that is not running as asked, one line each with its cause, grouped by cause",
		Description: "Every GPU pod of the cluster (of namespace -n alone when given; those -l selects) that waits, is stuck or\n" +
			"was refused, as gpuops why says it: per cause \"<code>: <n>\", then \"<ns>/<pod> <STATE> <code> <why>\".\n" +
			"A pod Pending for less than --stuck-after is Waiting, not a finding. Codes, in the headline's\n" +
			"precedence: " + strings.Join(workload.Codes, ", ") + ".\n" +
			"-o junit: a test case per GPU pod, failed when it is stuck; -o openreports: a result per GPU pod (policy pods).\n" +
			"Exit 1 if any pod is stuck.",
		Flags: append([]cli.Flag{o.Flag(), &cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Destination: &o.podSelector,
			Usage: "label selector of the pods listed, as kubectl -l (default: every GPU pod)"},
			o.operatorFlag(), o.Lab.JudgeFlag(), o.StuckAfterFlag(), o.DiscoverFlag()}, o.From.Flags()...),
	}, o)
}

func (o *podsOptions) Validate() error {
	if _, err := labels.Parse(o.podSelector); err != nil {
		return cliopts.UsageError(fmt.Errorf("--selector: %w", err))
	}
	return o.Judging.Validate()
}

func (o *podsOptions) Run(ctx context.Context) error {
	reader, err := o.Reader() // without -n, every namespace: not the context's
	if err != nil {
		return err
	}
	r, err := pipeline.Pods(ctx, reader, o.Opts, o.podNamespace, o.podSelector)
	if err = o.Done(err); err != nil {
		return err
	}
	if err := o.Printer.Pods(o.Out, o.ErrOut, r); err != nil {
		return err
	}
	return cliopts.FindingIf(r.Findings() > 0)
}
