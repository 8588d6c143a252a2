package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/version"

	"github.com/gpuops/gpuops/pkg/report"
)

// gpuopsVersion is set when linking a release:
// go build -ldflags "-X main.gpuopsVersion=v1.2.3". Otherwise the module
// version of `go install …@v1.2.3` is used, else "devel".
var gpuopsVersion string

// versionFormats are the formats of version's -o; without -o it prints text lines.
var versionFormats = []report.Format{report.JSON, report.YAML}

func versionOutputFlag() cli.Flag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: json or yaml (default: text lines)"}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of gpuops, its Go and its operand catalog, and the server's version",
		Description: "As kubectl version: the client's part always, then the API server's /version (exit 2,\n" +
			"after the client's part, when it cannot be read). --client skips the server;\n" +
			"`gpuops --version` is `gpuops version --client`.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "client", Usage: "only the client's part; contact no server"},
			versionOutputFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return printVersion(c, c.Bool("client"))
		},
	}
}

func printVersion(c *cli.Context, clientOnly bool) error {
	p := report.Printer{Format: report.Text}
	if s := c.String("output"); s != "" {
		f, err := report.ParseFormatOf(s, versionFormats...)
		if err != nil {
			return usageError(err)
		}
		p.Format = f
	}
	v := report.ClientVersionInfo(gpuopsVersion)
	var serverErr error
	if !clientOnly {
		v.ServerVersion, serverErr = serverVersion(c)
	}
	if err := p.Version(c.App.Writer, v); err != nil {
		return err
	}
	if serverErr != nil {
		return fmt.Errorf("server version: %w", serverErr)
	}
	return nil
}

func serverVersion(c *cli.Context) (*version.Info, error) {
	cl, err := connect(c)
	if err != nil {
		return nil, err
	}
	return cl.Kube.Discovery().ServerVersion()
}
