// Command doccheck checks the documentation of the repository against
// itself.
//
// Usage, from the repository root:
//
//	go run ./tools/cmd/doccheck anchors              # every DESIGN.md reference names an existing heading
//	go run ./tools/cmd/doccheck comments DIR...      # first sentences of exported doc comments: <= 25 words, <= 1 aside
//	go run ./tools/cmd/doccheck comments -report DIR...  # print the findings and counts, never fail
//
// anchors reads every .go and .md file and fails (exit 1) on a reference
// into a design document whose document or heading does not exist, and on a
// reference by section number (see doccheck.Anchors). comments reads the
// non-test files of each package directory named and fails on each exported
// identifier whose doc comment opens with a sentence of more than 25 words
// or with more than one parenthetical aside.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/babelqueue/babelqueue-go/tools/internal/doccheck"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: doccheck anchors|comments [flags] [DIR...]")
	}
	fs := flag.NewFlagSet("doccheck "+args[0], flag.ContinueOnError)
	root := fs.String("root", ".", "repository root")
	report := fs.Bool("report", false, "comments: print every finding and the counts, and do not fail")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "anchors":
		n, err := doccheck.Anchors(*root)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "doccheck: %d design-document references, each names a heading that exists\n", n)
		return nil
	case "comments":
		if fs.NArg() == 0 {
			return fmt.Errorf("comments: name the package directories")
		}
		found, st, err := doccheck.FirstSentences(*root, fs.Args(), doccheck.MaxFirstSentence)
		if err != nil {
			return err
		}
		for _, f := range found {
			fmt.Fprintln(stdout, f)
		}
		fmt.Fprintf(stdout, "doccheck: %d exported doc comments, first sentence median %d words, 90th percentile %d; %d over %d words or with a chain of asides\n",
			st.Documented, percentile(st.Words, 50), percentile(st.Words, 90), len(found), doccheck.MaxFirstSentence)
		if len(found) > 0 && !*report {
			return fmt.Errorf("%d doc comments open with a sentence over %d words or with more than %d parenthetical aside", len(found), doccheck.MaxFirstSentence, doccheck.MaxAsides)
		}
		return nil
	default:
		return fmt.Errorf("unknown command %q (anchors, comments)", args[0])
	}
}

func percentile(xs []int, p int) int {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return s[(len(s)-1)*p/100]
}
