// Command testtimes prints where the time of a `go test -json` run went: a
// table of the packages (wall, tests, and how long the package's lab cluster
// took to start) and one of the slowest tests, slowest first, in Markdown.
//
//	go test -json ./... > .lab/test.json; go run ./hack/testtimes .lab/test.json
//
// `go tool task test:times` runs the whole suite that way. The event format
// is the small, documented one of `go doc cmd/test2json`; the cluster start
// column reads internal/testcluster's "started cluster" line, which no
// general tool knows.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	top := flag.Int("top", 30, "slowest tests to list (0: all)")
	subtests := flag.Bool("subtests", false, "list subtests too")
	module := flag.String("module", "github.com/gpuops/gpuops", "module path left off package names")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: testtimes [flags] [FILE]  (FILE: go test -json output; default stdin)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var in io.Reader = os.Stdin
	switch flag.NArg() {
	case 0:
	case 1:
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintf(os.Stderr, "testtimes: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	default:
		flag.Usage()
		os.Exit(2)
	}
	run, err := Parse(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testtimes: %v\n", err)
		os.Exit(2)
	}
	if len(run.Packages) == 0 {
		fmt.Fprintln(os.Stderr, "testtimes: no go test -json events in the input")
		os.Exit(2)
	}
	run.Print(os.Stdout, *module, *top, *subtests)
}
