package kubectlcli

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Intersperse moves a command's positional arguments behind its flags, so
// "order-check NODE -o json" parses like kubectl: urfave/cli v2 stops reading
// flags at the first positional argument.
func Intersperse(app *cli.App, args []string) []string {
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
