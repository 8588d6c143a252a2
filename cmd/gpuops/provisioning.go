package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// provisioning are the options the provisioning commands share (up,
// optout, optin, reset, lab, guard install and uninstall), each binding
// the flags it takes.
type provisioning struct {
	cliopts.Env
	Lab     cliopts.Lab
	workdir string
	force   bool
	timeout time.Duration
}

func newProvisioning(e cliopts.Env) provisioning {
	return provisioning{Env: e, workdir: ".", timeout: provision.DefaultTimeout}
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

func (p *provisioning) Complete(*cli.Context) error { return p.Lab.Complete(p.Kube) }

// Validate refuses a wait that is no wait (a negative one is bad input,
// not "no wait"); a command without --timeout has its default.
func (p *provisioning) Validate() error {
	if p.timeout <= 0 {
		return cliopts.UsageError(fmt.Errorf("--timeout %s: want a positive duration such as 5m", p.timeout))
	}
	return nil
}

// prepare is the prelude of every provisioning command's Run: the lab
// spec, the clients, and the caller's rights to make the changes before
// making any.
func (p *provisioning) prepare(ctx context.Context, needs func(namespace string) []access.Need) (*labspec.Lab, *kube.Clients, error) {
	lab, err := p.Lab.Spec(gpuops.DefaultLab)
	if err != nil {
		return nil, nil, err
	}
	cl, err := p.ConnectWith(ctx, needs(lab.Namespace))
	return lab, cl, err
}

func (p *provisioning) options() provision.Options {
	return provision.Options{
		Force:    p.force,
		Timeout:  p.timeout,
		Progress: p.ErrOut,
		Changed:  func(ch provision.ObjectChange) { report.Change(p.Out, ch.Object, ch.Action, ch.Why) },
	}
}

func (p *provisioning) workspace() workspace.Workspace { return workspace.New(p.workdir) }

// assets are what the binary embeds: the operands' kustomize bases and the scripts.
var assets = provision.Assets{Kustomize: gpuops.Kustomize, Scripts: gpuops.Scripts}
