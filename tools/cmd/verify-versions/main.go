// Command verify-versions checks that every module of the repository
// requires its sibling modules at the versions listed in versions.txt.
//
// Usage, from the repository root:
//
//	go run ./tools/cmd/verify-versions [-root DIR]
//
// It exits 0 when everything agrees and 1, listing each mismatch, otherwise.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/babelqueue/babelqueue-go/tools/internal/versions"
)

func main() {
	root := flag.String("root", ".", "repository root holding versions.txt")
	flag.Parse()
	f, err := os.Open(filepath.Join(*root, "versions.txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify-versions:", err)
		os.Exit(1)
	}
	defer f.Close()
	l, err := versions.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify-versions:", err)
		os.Exit(1)
	}
	if err := versions.Check(*root, l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("verify-versions: %d modules agree with versions.txt\n", len(l))
}
