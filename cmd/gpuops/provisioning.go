package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/access"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/provision"
	"github.com/gpuops/gpuops/pkg/report"
	"github.com/gpuops/gpuops/pkg/workspace"
)

// Flags and plumbing shared by the provisioning commands (up, optout, optin, reset).

func workdirFlag() cli.Flag {
	return &cli.StringFlag{Name: "workdir", Value: ".", Usage: "workspace folder: manifests go to k8s/, results to out/"}
}

func timeoutFlag() cli.Flag {
	return &cli.DurationFlag{Name: "timeout", Value: provision.DefaultTimeout, Usage: "how long to wait for the cluster to settle",
		Action: durationAtLeast("timeout", time.Nanosecond, "a positive duration such as 5m")}
}

func forceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "force", Usage: "take over labels and DaemonSets that another field manager owns"}
}

// durationAtLeast refuses a duration flag's value below least, before the
// command runs (a negative wait is bad input, not "no wait"); want says
// what is meant instead.
func durationAtLeast(name string, least time.Duration, want string) func(*cli.Context, time.Duration) error {
	return func(_ *cli.Context, d time.Duration) error {
		if d < least {
			return usageError(fmt.Errorf("--%s %s: want %s", name, d, want))
		}
		return nil
	}
}

// prepare is the prelude of every provisioning command: read the lab spec,
// connect, and make sure the caller may make the changes before making any.
func prepare(c *cli.Context, needs func(namespace string) []access.Need) (*labspec.Lab, *kube.Clients, error) {
	defaultGC()
	lab, err := loadLab(c)
	if err != nil {
		return nil, nil, err
	}
	cl, err := connect(c)
	if err != nil {
		return nil, nil, err
	}
	if err := access.Check(c.Context, cl.Kube.AuthorizationV1(), needs(lab.Namespace)); err != nil {
		return nil, nil, err
	}
	return lab, cl, nil
}

func provisionOptions(c *cli.Context) provision.Options {
	return provision.Options{
		Force:    c.Bool("force"),
		Timeout:  c.Duration("timeout"),
		Progress: c.App.ErrWriter,
		Changed:  report.Changes(c.App.Writer),
	}
}

// assets are what the binary embeds: the operands' kustomize bases and the scripts.
var assets = provision.Assets{Kustomize: gpuops.Kustomize, Scripts: gpuops.Scripts}

func workspaceOf(c *cli.Context) workspace.Workspace { return workspace.New(c.String("workdir")) }
