package main

import (
	"github.com/urfave/cli/v2"

	gpuops "github.com/gpuops/gpuops"
	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
)

// One namespace per run, resolved once here for every command, provisioning
// and judging alike: -n when given, else the namespace of the --lab spec,
// else gpu-operator. So `up --lab x.yaml` and `audit --lab x.yaml` work in
// the same namespace.

func labFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Usage: "lab spec file: namespace, nodes and their labels (default: the built-in lab, see docs/lab.md)"}
}

func judgeLabFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Usage: "judge the namespace of the lab spec `FILE`, where up --lab FILE provisioned it (-n wins over it)"}
}

// resolveNamespace is the precedence: -n, else the --lab spec's (spec is
// nil when no --lab was given), else gpu-operator.
func resolveNamespace(flag string, spec *labspec.Lab) string {
	switch {
	case flag != "":
		return flag
	case spec != nil:
		return spec.Namespace
	}
	return kube.DefaultNamespace
}

// loadLab reads the --lab spec, or the built-in lab when none is given, in
// the namespace the command works in.
func loadLab(c *cli.Context) (*labspec.Lab, error) {
	given, err := givenLab(c)
	if err != nil {
		return nil, err
	}
	lab := given
	if lab == nil {
		if lab, err = labspec.Parse(gpuops.DefaultLab, operand.Lab); err != nil {
			return nil, err
		}
	}
	lab.Namespace = resolveNamespace(*configFlags(c).Namespace, given)
	return lab, nil
}

// namespace is the namespace a judge reads.
func namespace(c *cli.Context) (string, error) {
	given, err := givenLab(c)
	if err != nil {
		return "", err
	}
	return resolveNamespace(*configFlags(c).Namespace, given), nil
}

// givenLab is the --lab spec, nil when the flag is not given.
func givenLab(c *cli.Context) (*labspec.Lab, error) {
	return labspec.Load(c.String("lab"), operand.Lab)
}
