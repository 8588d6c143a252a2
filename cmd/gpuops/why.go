package main

import (
	"context"
	"errors"
	"strings"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/pipeline"
	"github.com/gpuops/gpuops/pkg/workload"
)

// workloadOptions are the options of the commands that read GPU pods
// (why): -n is the pods' namespace, as kubectl reads it, and the
// operator's has a flag of its own.
type workloadOptions struct {
	cliopts.Judging
	cliopts.Output
	operatorNamespace string
	podNamespace      string
}

func (o *workloadOptions) operatorFlag() cli.Flag {
	return &cli.StringFlag{Name: "operator-namespace", Destination: &o.operatorNamespace,
		Usage: "the GPU Operator's namespace, whose operands health judges (default: the --lab spec's, else " + kube.DefaultNamespace + ")"}
}

// Complete reads --from's input and resolves the operator's namespace
// from its flag (else the --lab spec's, else the input's header's), and
// the pods' when -n gives it.
func (o *workloadOptions) Complete(*cli.Context) error {
	ns := *o.Kube.Namespace
	*o.Kube.Namespace = o.operatorNamespace // the judges' namespace: the flag, else the --lab spec's
	err := o.CompleteWith(&o.Output)
	*o.Kube.Namespace = ns
	o.podNamespace = ns
	return err
}

// connect connects, and without -n takes the pods' namespace from the
// kubeconfig's context (else default), as kubectl does: reading the
// kubeconfig is the connection's part, after every flag is checked. With
// --from there is no context: default.
func (o *workloadOptions) connect() (kubernetes.Interface, error) {
	if o.podNamespace == "" && o.From.Set() {
		o.podNamespace = metav1.NamespaceDefault
	}
	if o.podNamespace == "" {
		ns, _, err := o.Kube.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, err
		}
		o.podNamespace = ns
	}
	return o.Reader()
}

type whyOptions struct {
	workloadOptions
	target workload.Target
}

func whyCommand(e cliopts.Env) *cli.Command {
	o := &whyOptions{workloadOptions: workloadOptions{Judging: cliopts.Judging{Env: e}, Output: cliopts.PlainOutput("the answer")}}
	return command(&cli.Command{
		Name:  "why",
		Usage: "why a GPU pod is not running: the cause a person can act on, node by node, in the GPU stack's terms",
		Description: "TARGET is POD, pod/NAME, or a workload whose pods are found through their owners: job/NAME,\n" +
			"deployment/NAME, statefulset/NAME; in the namespace -n names (as kubectl: else the context's, else\n" +
			"default). Per GPU pod a line \"<ns>/<pod> <STATE> <code> <why>\" (STATE Running, Waiting: Pending for\n" +
			"less than --stuck-after, Pending, Stuck, Refused), then per GPU node that could have taken it why not,\n" +
			"then the scheduler's own words. gpuops evaluates the scheduler's GPU-relevant filters itself on every\n" +
			"node (the request against allocatable minus what the pods bound there request, cordon, taints,\n" +
			"nodeSelector and required node affinity) with each node's health, and says scheduler when it finds a\n" +
			"node that fits. Codes, the headline's precedence first to last: " + strings.Join(workload.Codes, ", ") + ".\n" +
			"Exit 1 if a pod is stuck, 0 if each runs or waits (or asks no GPU), 2 for a pod or workload not found.",
		Flags: append([]cli.Flag{o.Flag(), o.operatorFlag(), o.Lab.JudgeFlag(), o.StuckAfterFlag(), o.DiscoverFlag()}, o.From.Flags()...),
	}, o)
}

func (o *whyOptions) forms() []kubectlcli.Form { return args(targetArg) }

func (o *whyOptions) Complete(c *cli.Context) error {
	if c.NArg() != 1 {
		return cliopts.UsageError(errWhyArgs)
	}
	t, err := workload.ParseTarget(c.Args().First())
	if err != nil {
		return cliopts.UsageError(err)
	}
	o.target = t
	return o.workloadOptions.Complete(c)
}

var errWhyArgs = errors.New("want one TARGET: POD, pod/NAME, job/NAME, deployment/NAME or statefulset/NAME")

func (o *whyOptions) Validate() error { return o.Judging.Validate() }

func (o *whyOptions) Run(ctx context.Context) error {
	reader, err := o.connect()
	if err != nil {
		return err
	}
	r, err := pipeline.Why(ctx, reader, o.Opts, o.podNamespace, o.target)
	if err = o.Done(err); err != nil {
		return err
	}
	if err := o.Printer.Why(o.Out, o.ErrOut, r); err != nil {
		return err
	}
	return cliopts.FindingIf(r.Findings() > 0)
}
