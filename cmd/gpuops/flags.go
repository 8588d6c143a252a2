package main

import (
	"flag"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/urfave/cli/v2"

	"github.com/gpuops/gpuops/pkg/kube"
)

const (
	connectionCategory = "Connection, as kubectl (before or after the command)"
	namespaceUsage     = "namespace of the operand DaemonSets, for every command (default: the --lab spec's namespace, else " +
		kube.DefaultNamespace + "; the kubeconfig context's namespace is not used)"
	configFlagsKey  = "configFlags"
	kubectlFlagsKey = "kubectlFlags"
)

// kubectlFlagSet holds kubectl's connection flags: every flag of
// cli-runtime's ConfigFlags, with its name, shorthand, help and meaning,
// writing into cf.
func kubectlFlagSet(cf *kube.Flags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	cf.AddFlags(fs)
	fs.Lookup("namespace").Usage = namespaceUsage
	return fs
}

// connectionFlags are the flags of fs as urfave/cli flags. The app and each
// command carry them, so they go before or after the command name; all
// copies write the same values, so the last one given wins and --as-group
// adds up, as in kubectl. Only the app's are listed in help.
func connectionFlags(fs *pflag.FlagSet, visible bool) []cli.Flag {
	var flags []cli.Flag
	fs.VisitAll(func(f *pflag.Flag) { flags = append(flags, &kubectlFlag{f: f, visible: visible}) })
	return flags
}

// configFlags are the connection flags of the running app.
func configFlags(c *cli.Context) *kube.Flags {
	return c.App.Metadata[configFlagsKey].(*kube.Flags)
}

// connect builds API clients from the connection flags.
func connect(c *cli.Context) (*kube.Clients, error) { return kube.Connect(configFlags(c)) }

// kubectlFlag is one pflag flag of ConfigFlags as a urfave/cli flag. Go's
// flag package parses it straight into the pflag value (a pflag bool is a
// flag without a value there too).
type kubectlFlag struct {
	f       *pflag.Flag
	visible bool
}

var _ interface {
	cli.DocGenerationFlag
	cli.CategorizableFlag
} = (*kubectlFlag)(nil)

func (k *kubectlFlag) Apply(set *flag.FlagSet) error {
	for _, name := range k.Names() {
		set.Var(k.f.Value, name, k.f.Usage)
	}
	return nil
}

func (k *kubectlFlag) Names() []string {
	if k.f.Shorthand != "" {
		return []string{k.f.Name, k.f.Shorthand}
	}
	return []string{k.f.Name}
}

func (k *kubectlFlag) String() string      { return cli.FlagStringer(k) }
func (k *kubectlFlag) IsSet() bool         { return k.f.Value.String() != k.f.DefValue }
func (k *kubectlFlag) IsVisible() bool     { return k.visible }
func (k *kubectlFlag) GetCategory() string { return connectionCategory }
func (k *kubectlFlag) TakesValue() bool    { return k.f.Value.Type() != "bool" }
func (k *kubectlFlag) GetUsage() string    { return k.f.Usage }
func (k *kubectlFlag) GetValue() string    { return k.f.Value.String() }
func (k *kubectlFlag) GetEnvVars() []string {
	return nil
}

// GetDefaultText shows a default only where there is one to show.
func (k *kubectlFlag) GetDefaultText() string {
	if d := k.f.DefValue; d != "" && d != "[]" && d != "false" {
		return d
	}
	return ""
}

// intersperse moves a command's positional arguments behind its flags, so
// "order-check NODE -o json" parses like kubectl: urfave/cli v2 stops reading
// flags at the first positional argument.
func intersperse(app *cli.App, args []string) []string {
	i := 1 // find the command name behind the global flags and their values
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if takesValue(app.Flags, args[i]) {
			i++
		}
		i++
	}
	if i >= len(args) || app.Command(args[i]) == nil {
		return args
	}
	cmd := app.Command(args[i])
	for sub := subcommand(cmd, args, i+1); sub != nil; sub = subcommand(cmd, args, i+1) {
		cmd, i = sub, i+1 // "guard install": the flags are the subcommand's
	}
	var flags, positional []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			positional = append(positional, rest[j:]...)
			j = len(rest)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			if takesValue(cmd.Flags, a) && j+1 < len(rest) {
				j++
				flags = append(flags, rest[j])
			}
		default:
			positional = append(positional, a)
		}
	}
	return slices.Concat(args[:i+1], flags, positional)
}

// takesValue reports whether arg is a flag of the set that reads the next
// argument as its value ("-o json", but not "--explain" or "-o=json").
func takesValue(set []cli.Flag, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range set {
		if slices.Contains(f.Names(), name) {
			df, ok := f.(cli.DocGenerationFlag)
			return ok && df.TakesValue()
		}
	}
	return false
}

// subcommand is cmd's subcommand named by args[i], nil if there is none.
func subcommand(cmd *cli.Command, args []string, i int) *cli.Command {
	if i >= len(args) {
		return nil
	}
	for _, sub := range cmd.Subcommands {
		if sub.HasName(args[i]) {
			return sub
		}
	}
	return nil
}
