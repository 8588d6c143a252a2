package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/report"
)

// gpuopsVersion is set when linking a release:
// go build -ldflags "-X main.gpuopsVersion=v1.2.3". Otherwise the module
// version of `go install …@v1.2.3` is used, else "devel".
var gpuopsVersion string

type versionOptions struct {
	cliopts.Env
	cliopts.Output
	clientOnly bool
}

// newVersion is version's Options; without -o it prints text lines.
func newVersion(e cliopts.Env) *versionOptions {
	return &versionOptions{Env: e, Output: cliopts.Output{Formats: []report.Format{report.JSON, report.YAML}, Usage: "output format: json or yaml (default: text lines)"}}
}

func versionCommand(e cliopts.Env) *cli.Command {
	o := newVersion(e)
	return command(&cli.Command{
		Name:  "version",
		Usage: "print the version of gpuops, its Go and its operand catalog, and the server's version",
		Description: "As kubectl version: the client's part always, then the API server's /version (exit 2,\n" +
			"after the client's part, when it cannot be read). --client skips the server;\n" +
			"`gpuops --version` is `gpuops version --client`.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "client", Destination: &o.clientOnly, Usage: "only the client's part; contact no server"},
			o.Flag(),
		},
	}, o)
}

func (o *versionOptions) Complete(*cli.Context) error { return o.Parse(o.Out) }

func (o *versionOptions) Validate() error { return nil } // -o is checked as it is parsed

func (o *versionOptions) Run(context.Context) error {
	v := report.ClientVersionInfo(gpuopsVersion)
	var serverErr error
	if !o.clientOnly {
		if cl, err := o.Connect(); err != nil {
			serverErr = err
		} else {
			v.ServerVersion, serverErr = cl.Kube.Discovery().ServerVersion()
		}
	}
	if err := o.Printer.Version(o.Out, v); err != nil {
		return err
	}
	if serverErr != nil {
		return fmt.Errorf("server version: %w", serverErr)
	}
	return nil
}
