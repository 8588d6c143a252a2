package main

import (
	"github.com/spf13/pflag"
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
)

const configFlagsKey = "configFlags"

// kubectlFlagSet holds kubectl's connection flags, writing into cf; -n
// names where the operands run.
func kubectlFlagSet(cf *kube.Flags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	cf.AddFlags(fs)
	fs.Lookup("namespace").Usage = "namespace of the operand DaemonSets, for every command (default: the --lab spec's namespace, else " +
		kube.DefaultNamespace + "; the kubeconfig context's namespace is not used)"
	return fs
}

// configFlags are the connection flags of the running app.
func configFlags(c *cli.Context) *kube.Flags { return c.App.Metadata[configFlagsKey].(*kube.Flags) }

// connect builds API clients from the connection flags.
func connect(c *cli.Context) (*kube.Clients, error) { return kube.Connect(configFlags(c)) }
