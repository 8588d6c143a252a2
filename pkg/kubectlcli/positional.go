package kubectlcli

import (
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/urfave/cli/v2"
)

// Arg is one positional argument of a command.
type Arg struct {
	// Kind is what the argument names, as the usage line shows it (NODE)
	// and the key of Completion.Args that completes it.
	Kind string
	// Many: any number of them, none included ([NODE...]); the last of a
	// form.
	Many bool
}

// Form is one way to give a command its positional arguments. A form with
// a Flag (one of the command's flags, by any of its names, whose value the
// usage line calls Value) is the one taken when that flag is on the line:
// optout -l SELECTOR OPERAND names the nodes by the flag.
type Form struct {
	Flag, Value string
	Args        []Arg
}

// positionals holds each command's forms, as Positional declared them:
// urfave/cli keeps no data of a command's own besides its help text.
var positionals sync.Map // *cli.Command → []Form

// Positional declares cmd's positional arguments, one Form per way of
// giving them (the one without a flag first). Its help's usage line is made
// from them, and completion completes each by its kind.
func Positional(cmd *cli.Command, forms ...Form) *cli.Command {
	usage := make([]string, len(forms))
	for i, f := range forms {
		var words []string
		if f.Flag != "" {
			words = append(words, "-"+f.Flag, f.Value)
			if len(f.Flag) > 1 {
				words[0] = "-" + words[0]
			}
		}
		for _, a := range f.Args {
			if a.Many {
				words = append(words, "["+a.Kind+"...]")
			} else {
				words = append(words, a.Kind)
			}
		}
		usage[i] = strings.Join(words, " ")
	}
	cmd.ArgsUsage = strings.Join(usage, " | ")
	positionals.Store(cmd, forms)
	return cmd
}

// FormsOf are the forms Positional declared for cmd; none for a command
// that takes no positional argument.
func FormsOf(cmd *cli.Command) []Form {
	forms, _ := positionals.Load(cmd)
	f, _ := forms.([]Form)
	return f
}

// kindAt is the kind of the positional argument at index i of the form
// that the flags on the line choose; false past the last.
func kindAt(forms []Form, changed func(flag string) bool, i int) (string, bool) {
	var form *Form
	for j := range forms {
		if f := &forms[j]; f.Flag == "" && form == nil || f.Flag != "" && changed(f.Flag) {
			form = f
		}
	}
	if form == nil {
		return "", false
	}
	for j, a := range form.Args {
		if j == i || a.Many && j <= i {
			return a.Kind, true
		}
	}
	return "", false
}

// onLine reports whether the mirrored command's flag of that name (long or
// short) is on the line.
func onLine(cmd *cobra.Command) func(name string) bool {
	return func(name string) bool {
		f := cmd.Flags().Lookup(name)
		if f == nil && len(name) == 1 {
			f = cmd.Flags().ShorthandLookup(name)
		}
		return f != nil && f.Changed
	}
}
