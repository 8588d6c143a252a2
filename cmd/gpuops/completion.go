package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuops/gpuops/pkg/kube"
	"github.com/gpuops/gpuops/pkg/operand"
	"github.com/gpuops/gpuops/pkg/report"
)

// Shell completion speaks Cobra's protocol, which kubectl's own completion
// and every Cobra-made kubectl plugin speak: the shell script asks
// `gpuops __complete ARGS... PARTIAL` and reads one candidate a line, then
// ":<directive>". A Cobra command tree mirroring the app answers, so Cobra
// parses the line (flags before or after the command, --flag=value) and
// writes the bash, zsh and fish scripts.

// shells are the shells `gpuops completion` writes a script for.
var shells = []string{"bash", "zsh", "fish"}

// completionTimeout bounds the API reads behind one TAB.
const completionTimeout = 5 * time.Second

// completionCommand writes scripts that complete the binary called prog.
func completionCommand(prog string) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "SHELL",
		Description: "Completes commands, flags, operand names, and node names, contexts and namespaces\n" +
			"read with the connection flags on the line. Load it from your shell's start-up file:\n" +
			"  bash:  source <(" + prog + " completion bash)        (in ~/.bashrc)\n" +
			"  zsh:   source <(" + prog + " completion zsh)         (in ~/.zshrc, after compinit)\n" +
			"  fish:  " + prog + " completion fish | source         (in ~/.config/fish/config.fish)\n" +
			"For `kubectl gpuops <TAB>`, kubectl (v1.26+) asks kubectl_complete-gpuops on PATH: link\n" +
			"it to the plugin, e.g. ln -s kubectl-gpuops \"$(dirname \"$(command -v kubectl-gpuops)\")/kubectl_complete-gpuops\".",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 || !slices.Contains(shells, c.Args().First()) {
				return usageError(fmt.Errorf("want one SHELL of %s, got %q", strings.Join(shells, ", "), c.Args().Slice()))
			}
			root := completionTree(c.App, kube.NewFlags())
			switch w := c.App.Writer; c.Args().First() {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			default:
				return root.GenFishCompletion(w, true)
			}
		},
	}
}

// complete answers one completion request (args after the program name,
// starting with __complete) as Cobra does.
func complete(ctx context.Context, app *cli.App, args []string, stdout, stderr io.Writer) int {
	root := completionTree(app, kube.NewFlags())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "error: %s\n", oneLine(err))
		return exitError
	}
	return exitOK
}

// isCompletionRequest reports whether args (after the program name) ask
// for completions.
func isCompletionRequest(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// completionTree mirrors the app's commands and flags as Cobra commands,
// with the candidates for each argument and flag value. The connection
// flags parse into cf, so the cluster is read as the line says.
func completionTree(app *cli.App, cf *kube.Flags) *cobra.Command {
	root := &cobra.Command{Use: strings.ReplaceAll(app.Name, " ", "-"), SilenceErrors: true, SilenceUsage: true}
	root.CompletionOptions.DisableDefaultCmd = true
	root.Flags().Bool("version", false, "print gpuops' version")
	cf.AddFlags(root.PersistentFlags())
	for name, fn := range map[string]cobra.CompletionFunc{
		"context":   fromKubeconfig(cf, func(c clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Contexts)) }),
		"cluster":   fromKubeconfig(cf, func(c clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Clusters)) }),
		"user":      fromKubeconfig(cf, func(c clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.AuthInfos)) }),
		"namespace": fromCluster(cf, corev1.SchemeGroupVersion.WithResource("namespaces")),
	} {
		_ = root.RegisterFlagCompletionFunc(name, fn)
	}
	for _, cmd := range app.VisibleCommands() {
		if cmd.Name == "help" {
			continue // Cobra's own stands for it
		}
		sub := &cobra.Command{
			Use:               cmd.Name,
			Short:             cmd.Usage,
			Run:               func(*cobra.Command, []string) {},
			ValidArgsFunction: positional(cf, strings.Fields(cmd.ArgsUsage)),
		}
		for _, f := range cmd.Flags {
			df, ok := f.(cli.DocGenerationFlag)
			if _, kubectl := f.(*kubectlFlag); !ok || kubectl {
				continue
			}
			name, short := df.Names()[0], ""
			for _, alias := range df.Names()[1:] {
				if len(alias) == 1 {
					short = alias
				}
			}
			usage, _, _ := strings.Cut(strings.ReplaceAll(df.GetUsage(), "`", ""), "\n")
			if df.TakesValue() {
				sub.Flags().StringP(name, short, "", usage)
				_ = sub.RegisterFlagCompletionFunc(name, flagValues(cmd, name))
			} else {
				sub.Flags().BoolP(name, short, false, usage)
			}
		}
		root.AddCommand(sub)
	}
	return root
}

// flagValues completes the value of a command's own flag.
func flagValues(cmd *cli.Command, flag string) cobra.CompletionFunc {
	fixed := func(values ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	switch flag {
	case "output":
		offered := slices.Concat(report.Formats, extraFormats(cmd))
		if cmd.Name == "version" {
			offered = versionFormats
		}
		var formats []string
		for _, f := range offered {
			formats = append(formats, string(f))
		}
		return fixed(formats...)
	case "lab":
		return cobra.FixedCompletions([]string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt)
	case "workdir":
		return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		}
	}
	return cobra.NoFileCompletions
}

// positional completes the arguments named in a command's ArgsUsage.
func positional(cf *kube.Flags, names []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(names) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		switch names[len(args)] {
		case "NODE":
			return fromCluster(cf, corev1.SchemeGroupVersion.WithResource("nodes"))(cmd, args, toComplete)
		case "OPERAND":
			var out []cobra.Completion
			for _, o := range operand.Lab {
				out = append(out, cobra.CompletionWithDesc(o.Name, "DaemonSet "+o.DaemonSet))
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		case "SHELL":
			return shells, cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// fromCluster completes the names of a resource, read (names only) with
// the connection flags on the line. A cluster that cannot be read offers
// nothing.
func fromCluster(cf *kube.Flags, gvr schema.GroupVersionResource) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cl, err := kube.Connect(cf)
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		mc, err := metadata.NewForConfig(cl.Config)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := mc.Resource(gvr).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, len(list.Items))
		for i, item := range list.Items {
			names[i] = item.Name
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// fromKubeconfig completes names the kubeconfig on the line defines.
func fromKubeconfig(cf *kube.Flags, names func(clientcmdapi.Config) []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := cf.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(raw), cobra.ShellCompDirectiveNoFileComp
	}
}
