package kubectlcli

import (
	"flag"

	"github.com/spf13/pflag"
	"github.com/urfave/cli/v2"
)

const connectionCategory = "Connection, as kubectl (before or after the command)"

// connectionFlags are the flags of fs as urfave/cli flags. The app and each
// command carry them, so they go before or after the command name; all
// copies write the same values, so the last one given wins and --as-group
// adds up, as in kubectl. Only the app's are listed in help.
func connectionFlags(fs *pflag.FlagSet, visible bool) []cli.Flag {
	var flags []cli.Flag
	fs.VisitAll(func(f *pflag.Flag) { flags = append(flags, &kubectlFlag{f: f, visible: visible}) })
	return flags
}

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
