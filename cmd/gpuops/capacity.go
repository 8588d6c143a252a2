package main

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/workload"
)

type capacityOptions struct {
	cliopts.Judging
	cliopts.Output
}

func capacityCommand(e cliopts.Env) *cli.Command {
	o := &capacityOptions{Judging: cliopts.Judging{Env: e}, Output: cliopts.PlainOutput("the counts")}
	return command(&cli.Command{
		Name:  "capacity",
		Usage: "where the GPUs are: per node pool and resource, advertised, allocatable, allocated, free, unhealthy, stranded",
		Description: "Groups the GPU nodes by a node label (--group-by, default " + pipeline.DefaultGroupBy + "; nodes without\n" +
			"it in " + pipeline.NoGroup + ") and counts, per pool, its nodes and physical GPUs (GFD's nvidia.com/gpu.count, else the\n" +
			"devices the DRA driver publishes), and per resource a pod asks (nvidia.com/gpu, a shared nvidia.com/gpu.shared,\n" +
			"MIG nvidia.com/mig-<profile>, the DRA driver's gpu.nvidia.com): advertised (capacity), allocatable,\n" +
			"unhealthy (the difference), allocated (what the pods that have not ended request there; DRA: the devices\n" +
			"in claims' allocations), free, and stranded: held by no pod on a node that takes no new GPU work, by\n" +
			"reason (" + strings.Join(workload.Reasons, ", ") + "), and the largest free block on one node.\n" +
			"Allocatable is allocated + free + stranded. Reads the pods of every namespace. Exit 0.",
		Flags: append([]cli.Flag{o.Flag(), o.GroupByFlag(pipeline.DefaultGroupBy), o.Lab.JudgeFlag(), o.SelectorFlag(), o.DiscoverFlag(), o.StuckAfterFlag()}, o.From.Flags()...),
	}, o)
}

func (o *capacityOptions) Complete(*cli.Context) error { return o.CompleteWith(&o.Output) }

func (o *capacityOptions) Validate() error { return o.Judging.Validate() }

func (o *capacityOptions) Run(ctx context.Context) error {
	reader, err := o.Reader()
	if err != nil {
		return err
	}
	c, err := pipeline.Capacity(ctx, reader, o.Opts)
	if err = o.Done(err); err != nil {
		return err
	}
	return o.Printer.Capacity(o.Out, o.ErrOut, c)
}
