package kubectlcli

import (
	"context"
	"fmt"
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
)

// Shell completion speaks Cobra's protocol, which kubectl's own completion
// and every Cobra-made kubectl plugin speak: the shell script asks
// `NAME __complete ARGS... PARTIAL` and reads one candidate a line, then
// ":<directive>". A Cobra command tree mirroring the app answers, so Cobra
// parses the line (flags before or after the command, --flag=value) and
// writes the bash, zsh and fish scripts.

// Completion is what an app's own arguments and flag values complete to.
// Commands, flags, and the connection flags' contexts, clusters, users and
// namespaces complete without it.
type Completion struct {
	// Offers names the candidates in the completion command's help.
	Offers string
	// Args completes the positional arguments of each kind (Arg.Kind) that
	// the commands declare (Positional).
	Args map[string]Completer
	// Flag completes the value of a command's own flag; nil offers none.
	Flag func(cmd *cli.Command, flag string) Completer
}

// A Completer offers candidates, reading the cluster, if it must, with cf:
// the connection flags on the line.
type Completer func(cf *kube.Flags) cobra.CompletionFunc

// Words offers fixed words; a tab in one starts its description.
func Words[S ~string](words ...S) Completer {
	choices := make([]cobra.Completion, len(words))
	for i, w := range words {
		choices[i] = string(w)
	}
	return func(*kube.Flags) cobra.CompletionFunc {
		return cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp)
	}
}

// Files offers the files with one of the extensions (no dot).
func Files(exts ...string) Completer {
	return func(*kube.Flags) cobra.CompletionFunc {
		return cobra.FixedCompletions(exts, cobra.ShellCompDirectiveFilterFileExt)
	}
}

// Dirs offers directories.
func Dirs(*kube.Flags) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
}

// Names offers the names of a resource, read (names only) with the
// connection flags on the line, in every namespace. A cluster that cannot
// be read offers nothing.
func Names(gvr schema.GroupVersionResource) Completer { return names(gvr, false) }

// NamesHere offers the names of a namespaced resource in the namespace the
// line names as kubectl reads it (-n, else the context's, else default).
func NamesHere(gvr schema.GroupVersionResource) Completer { return names(gvr, true) }

func names(gvr schema.GroupVersionResource, here bool) Completer {
	return func(cf *kube.Flags) cobra.CompletionFunc {
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
			ns := metav1.NamespaceAll
			if here {
				if ns, _, err = cf.ToRawKubeConfigLoader().Namespace(); err != nil {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
			}
			list, err := mc.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
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
}

// completionTimeout bounds the API reads behind one TAB.
const completionTimeout = 5 * time.Second

// shells are the shells the completion command writes a script for.
var shells = []string{"bash", "zsh", "fish"}

// completionCommand writes scripts that complete the binary called prog.
func (p Plugin) completionCommand(prog string) *cli.Command {
	plugin, helper := "kubectl-"+p.Name, "kubectl_complete-"+p.Name
	return Positional(&cli.Command{
		Name:  "completion",
		Usage: "print the shell completion script for bash, zsh or fish",
		Description: "Completes commands, flags, " + p.Offers + ", contexts and namespaces\n" +
			"read with the connection flags on the line. Load it from your shell's start-up file:\n" +
			"  bash:  source <(" + prog + " completion bash)        (in ~/.bashrc)\n" +
			"  zsh:   source <(" + prog + " completion zsh)         (in ~/.zshrc, after compinit)\n" +
			"  fish:  " + prog + " completion fish | source         (in ~/.config/fish/config.fish)\n" +
			"For `kubectl " + p.Name + " <TAB>`, kubectl (v1.26+) asks " + helper + " on PATH: link\n" +
			"it to the plugin, e.g. ln -s " + plugin + " \"$(dirname \"$(command -v " + plugin + ")\")/" + helper + "\".",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 || !slices.Contains(shells, c.Args().First()) {
				return usageError(c, fmt.Errorf("want one SHELL of %s, got %q", strings.Join(shells, ", "), c.Args().Slice()))
			}
			root := p.tree(c.App, kube.NewFlags())
			switch w := c.App.Writer; c.Args().First() {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			default:
				return root.GenFishCompletion(w, true)
			}
		},
	}, Form{Args: []Arg{{Kind: shellArg}}})
}

// shellArg is the kind of the completion command's argument.
const shellArg = "SHELL"

// complete answers one completion request (args after the program name,
// starting with __complete) as Cobra does.
func (p Plugin) complete(ctx context.Context, app *cli.App, args []string) error {
	root := p.tree(app, kube.NewFlags())
	root.SetArgs(args)
	root.SetOut(app.Writer)
	root.SetErr(app.ErrWriter)
	return root.ExecuteContext(ctx)
}

// tree mirrors the app's commands and flags as Cobra commands, with the
// candidates for each argument and flag value. The connection flags parse
// into cf, so the cluster is read as the line says.
func (p Plugin) tree(app *cli.App, cf *kube.Flags) *cobra.Command {
	root := &cobra.Command{Use: strings.ReplaceAll(app.Name, " ", "-"), SilenceErrors: true, SilenceUsage: true}
	root.CompletionOptions.DisableDefaultCmd = true
	mirror(root, app.Flags, func(string) cobra.CompletionFunc { return cobra.NoFileCompletions })
	cf.AddFlags(root.PersistentFlags())
	for name, fn := range map[string]cobra.CompletionFunc{
		"context":   fromKubeconfig(cf, func(c clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Contexts)) }),
		"cluster":   fromKubeconfig(cf, func(c clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Clusters)) }),
		"user":      fromKubeconfig(cf, func(c clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.AuthInfos)) }),
		"namespace": Names(corev1.SchemeGroupVersion.WithResource("namespaces"))(cf),
	} {
		_ = root.RegisterFlagCompletionFunc(name, fn)
	}
	p.commands(root, app.VisibleCommands(), cf)
	return root
}

// commands mirrors cmds, and their subcommands, under parent.
func (p Plugin) commands(parent *cobra.Command, cmds []*cli.Command, cf *kube.Flags) {
	for _, cmd := range cmds {
		if cmd.Name == "help" || cmd.Hidden {
			continue // Cobra's own stands for it
		}
		sub := &cobra.Command{
			Use:               cmd.Name,
			Short:             cmd.Usage,
			Run:               func(*cobra.Command, []string) {},
			ValidArgsFunction: p.positional(cf, FormsOf(cmd)),
		}
		mirror(sub, cmd.Flags, func(flag string) cobra.CompletionFunc {
			if p.Flag == nil || p.Flag(cmd, flag) == nil {
				return cobra.NoFileCompletions
			}
			return p.Flag(cmd, flag)(cf)
		})
		p.commands(sub, cmd.Subcommands, cf)
		parent.AddCommand(sub)
	}
}

// mirror gives c the flags but the connection flags, each completing its
// value with values.
func mirror(c *cobra.Command, flags []cli.Flag, values func(flag string) cobra.CompletionFunc) {
	for _, f := range flags {
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
			c.Flags().StringP(name, short, "", usage)
			_ = c.RegisterFlagCompletionFunc(name, values(name))
		} else {
			c.Flags().BoolP(name, short, false, usage)
		}
	}
}

// positional completes a command's positional arguments, by the kind its
// forms declare at the argument's place in the form the flags on the line
// choose: the completion command's SHELL, or the app's.
func (p Plugin) positional(cf *kube.Flags, forms []Form) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		kind, ok := kindAt(forms, onLine(cmd), len(args))
		c := p.Args[kind]
		if kind == shellArg {
			c = Words(shells...)
		}
		if !ok || c == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return c(cf)(cmd, args, toComplete)
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

// Contexts offers the kubeconfig's contexts for a flag that takes a list
// of them, a,b,…: after "a," it offers "a,<context>" for each context not
// yet in the list, and leaves the cursor there for another comma.
func Contexts(cf *kube.Flags) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names, err := cf.Contexts()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		given := toComplete[:strings.LastIndex(toComplete, ",")+1]
		var out []cobra.Completion
		for _, n := range names {
			if !slices.Contains(strings.Split(given, ","), n) {
				out = append(out, given+n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
}
