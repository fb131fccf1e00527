// Command bqconform runs a BabelQueue conformance suite against every
// binding linked into it and prints one line per block and binding, then
// "N passed, M failed, K skipped" (counting cases). It exits 1 when any case
// fails and 2 when the suite cannot be loaded.
//
// Usage:
//
//	bqconform [-suite DIR]
//
// Without -suite it runs the suite embedded in the conformance module. Any
// directory in the canonical format runs unchanged; blocks this runner does
// not know are reported as skipped.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/schemacheck"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bqconform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("suite", "", "suite directory (default: the suite embedded in the conformance module)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var (
		s   *conformance.Suite
		err error
	)
	if *dir == "" {
		s, err = conformance.DefaultSuite()
	} else {
		s, err = conformance.LoadDir(*dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bqconform:", err)
		return 2
	}
	rep := conformance.RunSuite(context.Background(), s, bindings()...)
	rep.Results = append(rep.Results, schemacheck.Result(s))
	if err := rep.Write(stdout); err != nil {
		fmt.Fprintln(stderr, "bqconform:", err)
		return 2
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
