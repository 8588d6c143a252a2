package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// One namespace per run, resolved once here for every command, provisioning
// and judging alike: -n when given, else the namespace of the --lab spec,
// else gpu-operator. So `up --lab x.yaml` and `audit --lab x.yaml` work in
// the same namespace.

// labOption is --lab and the namespace the command works in.
type labOption struct {
	file      string
	given     *labspec.Lab // the --lab spec; nil without one
	namespace string
}

func (l *labOption) specFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Destination: &l.file, Usage: "lab spec file: namespace, nodes and their labels (default: the built-in lab, see docs/lab.md)"}
}

func (l *labOption) judgeFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Destination: &l.file, Usage: "judge the namespace of the lab spec `FILE`, where up --lab FILE provisioned it (-n wins over it)"}
}

// complete reads the --lab spec, if given, and resolves the namespace
// with the connection flags f.
func (l *labOption) complete(f *kube.Flags) error {
	var err error
	if l.given, err = labspec.Load(l.file, operand.Lab); err != nil {
		return err
	}
	switch {
	case *f.Namespace != "":
		l.namespace = *f.Namespace
	case l.given != nil:
		l.namespace = l.given.Namespace
	default:
		l.namespace = kube.DefaultNamespace
	}
	return nil
}

// spec is the --lab spec, or the built-in lab when none is given, in the
// namespace the command works in.
func (l *labOption) spec() (*labspec.Lab, error) {
	lab := l.given
	if lab == nil {
		var err error
		if lab, err = labspec.Parse(gpuops.DefaultLab, operand.Lab); err != nil {
			return nil, err
		}
	}
	lab.Namespace = l.namespace
	return lab, nil
}

// provisioning are the options the provisioning commands share (up,
// optout, optin, reset, lab, guard install and uninstall), each binding
// the flags it takes.
type provisioning struct {
	env
	lab     labOption
	workdir string
	force   bool
	timeout time.Duration
}

func newProvisioning(e env) provisioning {
	return provisioning{env: e, workdir: ".", timeout: provision.DefaultTimeout}
}

func (p *provisioning) workdirFlag() cli.Flag {
	return &cli.StringFlag{Name: "workdir", Value: ".", Destination: &p.workdir, Usage: "workspace folder: manifests go to k8s/, results to out/"}
}

func (p *provisioning) timeoutFlag() cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Value: provision.DefaultTimeout, Destination: &p.timeout, Usage: "how long to wait for the cluster to settle"}
}

// forceFlag is --force, saying what it takes over.
func (p *provisioning) forceFlag(usage string) cli.Flag {
	return &cli.BoolFlag{Name: "force", Destination: &p.force, Usage: usage}
}

const forceUsage = "take over labels and DaemonSets that another field manager owns"

func (p *provisioning) Complete(*cli.Context) error { return p.lab.complete(p.kube) }

// Validate refuses a wait that is no wait (a negative one is bad input,
// not "no wait"); a command without --timeout has its default.
func (p *provisioning) Validate() error {
	if p.timeout <= 0 {
		return usageError(fmt.Errorf("--timeout %s: want a positive duration such as 5m", p.timeout))
	}
	return nil
}

// prepare is the prelude of every provisioning command's Run: the lab
// spec, the clients, and the caller's rights to make the changes before
// making any.
func (p *provisioning) prepare(ctx context.Context, needs func(namespace string) []access.Need) (*labspec.Lab, *kube.Clients, error) {
	defaultGC()
	lab, err := p.lab.spec()
	if err != nil {
		return nil, nil, err
	}
	cl, err := p.connectWith(ctx, needs(lab.Namespace))
	return lab, cl, err
}

func (p *provisioning) options() provision.Options {
	return provision.Options{
		Force:    p.force,
		Timeout:  p.timeout,
		Progress: p.errOut,
		Changed:  func(ch provision.ObjectChange) { report.Change(p.out, ch.Object, ch.Action, ch.Why) },
	}
}

func (p *provisioning) workspace() workspace.Workspace { return workspace.New(p.workdir) }

// assets are what the binary embeds: the operands' kustomize bases and the scripts.
var assets = provision.Assets{Kustomize: gpuops.Kustomize, Scripts: gpuops.Scripts}
