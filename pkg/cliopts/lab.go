package cliopts

import (
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/labspec"
	"github.com/gpuops/gpuops/pkg/operand"
)

// Lab is --lab and the namespace the command works in. One namespace per
// run, resolved once here for every command, provisioning and judging
// alike: -n when given, else the namespace of the --lab spec, else
// gpu-operator. So `up --lab x.yaml` and `audit --lab x.yaml` work in the
// same namespace.
type Lab struct {
	File      string
	Given     *labspec.Lab // the --lab spec; nil without one
	Namespace string
}

// SpecFlag is the provisioning commands' --lab.
func (l *Lab) SpecFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Destination: &l.File, Usage: "lab spec file: namespace, nodes and their labels (default: the built-in lab, see docs/lab.md)"}
}

// JudgeFlag is the judges' --lab.
func (l *Lab) JudgeFlag() cli.Flag {
	return &cli.StringFlag{Name: "lab", Destination: &l.File, Usage: "judge the namespace of the lab spec `FILE`, where up --lab FILE provisioned it (-n wins over it)"}
}

// Complete reads the --lab spec, if given, and resolves the namespace
// with the connection flags f.
func (l *Lab) Complete(f *kube.Flags) error {
	var err error
	if l.Given, err = labspec.Load(l.File, operand.Lab); err != nil {
		return err
	}
	switch {
	case *f.Namespace != "":
		l.Namespace = *f.Namespace
	case l.Given != nil:
		l.Namespace = l.Given.Namespace
	default:
		l.Namespace = kube.DefaultNamespace
	}
	return nil
}

// Spec is the --lab spec, or else the built-in lab (its YAML), in the
// namespace the command works in.
func (l *Lab) Spec(builtin []byte) (*labspec.Lab, error) {
	lab := l.Given
	if lab == nil {
		var err error
		if lab, err = labspec.Parse(builtin, operand.Lab); err != nil {
			return nil, err
		}
	}
	lab.Namespace = l.Namespace
	return lab, nil
}
