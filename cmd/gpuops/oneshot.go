package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/outcome"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/report"
)

// judgeOptions are a one-shot judge's: the shared options, -o, and the
// view it prints and what of its verdict is a finding.
type judgeOptions struct {
	cliopts.Judging
	cliopts.Output
	view   report.View
	failed func(*outcome.Result) bool
	// also sets what the command judges beyond the flags; nil for nothing.
	also func(*pipeline.Options)
}

func (o *judgeOptions) Complete(*cli.Context) error {
	if err := o.CompleteWith(&o.Output); err != nil {
		return err
	}
	if o.also != nil {
		o.also(&o.Opts)
	}
	return nil
}

func (o *judgeOptions) Validate() error { return o.Judging.Validate() }

// Run judges, prints the view and exits 1 on a finding.
func (o *judgeOptions) Run(ctx context.Context) error {
	r, cs, err := o.Judge(ctx)
	if err != nil {
		return err
	}
	if err := o.Result(o.Env, r, cs, o.view); err != nil {
		return err
	}
	return cliopts.ExitOf(r, cs, o.failed)
}

// newJudge is a one-shot judge's Options, printing view with the formats
// of out; failed says which verdicts are findings (exit 1).
func newJudge(e cliopts.Env, out cliopts.Output, view report.View, failed func(*outcome.Result) bool) *judgeOptions {
	return &judgeOptions{Judging: cliopts.Judging{Env: e}, Output: out, view: view, failed: failed}
}
