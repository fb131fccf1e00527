// Command bqconform runs a BabelQueue conformance suite and prints the
// matrix: one row per block, one column per binding, each cell "PASS n/m",
// "FAIL n/m" (cases passed of the block's cases) or "SKIP why"; then the
// suite checks (the producer schema), the failed cases, and
// "N passed, M failed, K skipped" (counting cases). It exits 1 when any case
// fails or a report is missing, and 2 when the suite or a report cannot be
// used.
//
// Usage:
//
//	bqconform [-suite DIR]                     run the bindings linked in (core)
//	bqconform [-suite DIR] -matrix REPORT...   merge bindings' JSON reports
//
// Without -suite the suite embedded in the conformance module is used. Any
// directory in the canonical format runs unchanged; blocks this runner does
// not know are reported as skipped ("unknown block"), never as passed.
//
// The broker bindings cannot be linked in (their modules require this one),
// so each runs the suite in its own conformance test and, with
// BQ_CONFORMANCE_REPORT=path set, writes its report there; -matrix merges
// those reports, after checking that each ran the same suite (manifest
// digest). A report file that does not exist is a column of failures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/schemacheck"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("bqconform", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("suite", "", "suite directory (default: the suite embedded in the conformance module)")
	merge := flags.Bool("matrix", false, "merge the JSON reports named by the arguments (written by the bindings' conformance tests with "+conformance.ReportEnv+") instead of running the linked bindings")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *merge != (flags.NArg() > 0) {
		fmt.Fprintln(stderr, "bqconform: report files go with -matrix, and -matrix needs at least one")
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
	var m *conformance.Matrix
	if *merge {
		if m, err = mergeReports(s, flags.Args(), stderr); err != nil {
			fmt.Fprintln(stderr, "bqconform:", err)
			return 2
		}
	} else if m, err = conformance.NewMatrix(conformance.RunSuite(context.Background(), s, bindings()...)); err != nil {
		fmt.Fprintln(stderr, "bqconform:", err)
		return 2
	}
	m.Checks = append(m.Checks, schemacheck.Result(s))
	if err := m.Write(stdout); err != nil {
		fmt.Fprintln(stderr, "bqconform:", err)
		return 2
	}
	if !m.OK() {
		return 1
	}
	return 0
}

// mergeReports reads the report files into one matrix. A file that does
// not exist becomes a column (named after the file) of failures; a report
// of another suite than s is an error.
func mergeReports(s *conformance.Suite, paths []string, stderr io.Writer) (*conformance.Matrix, error) {
	m, err := conformance.NewMatrix()
	if err != nil {
		return nil, err
	}
	for _, b := range s.Blocks { // every block of the suite is a row, reported or not
		m.Blocks = append(m.Blocks, b.ID)
	}
	for _, p := range paths {
		rep, err := conformance.ReadReportFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "bqconform: %s: no report (did the binding's conformance test run with %s?)\n", p, conformance.ReportEnv)
			m.AddMissing(strings.TrimSuffix(filepath.Base(p), ".json"), "no report")
			continue
		}
		if err != nil {
			return nil, err
		}
		if rep.SuiteDigest != s.Digest {
			return nil, fmt.Errorf("%s: ran suite %q (manifest %.12s), not the suite checked here (manifest %.12s)", p, rep.Suite, rep.SuiteDigest, s.Digest)
		}
		if err := m.Add(rep); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return m, nil
}
