package main

import (
	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuops/gpuops/pkg/cliopts"
	"github.com/gpuops/gpuops/pkg/kubectlcli"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/rehearsal"
)

// plugin is gpuops as a kubectl plugin, with its own completions.
var plugin = kubectlcli.Plugin{Name: "gpuops", Completion: kubectlcli.Completion{
	Offers: "operand names, and node names",
	Args: map[string]kubectlcli.Completer{
		nodeArg:    kubectlcli.Names(corev1.SchemeGroupVersion.WithResource("nodes")),
		operandArg: kubectlcli.Words(operandWords()...),
		targetArg:  kubectlcli.NamesHere(corev1.SchemeGroupVersion.WithResource("pods")),
	},
	Flag: flagValues,
}}

// operandWords are the lab's operands, each described by its DaemonSet.
func operandWords() []string {
	var words []string
	for _, o := range operand.Lab {
		words = append(words, o.Name+"\tDaemonSet "+o.DaemonSet)
	}
	return words
}

// flagValues completes the value of a command's own flag.
func flagValues(cmd *cli.Command, flag string) kubectlcli.Completer {
	switch flag {
	case "output":
		return kubectlcli.Words(cliopts.FormatsOf(cmd)...)
	case "lab":
		return kubectlcli.Files("yaml", "yml")
	case "workdir":
		return kubectlcli.Dirs
	case "contexts":
		return kubectlcli.Contexts
	case "scenario":
		return kubectlcli.Words(rehearsal.Scenarios...)
	}
	return nil
}
