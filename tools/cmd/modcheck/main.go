// Command modcheck checks the graph of the repository's modules and that
// every go.mod is tidy, and writes a file-based module proxy of the working
// tree for release tests.
//
// Usage, from the repository root:
//
//	go run ./tools/cmd/modcheck graph [-leaf core,brokertest]   # cycles, replace directives, stand-alone modules
//	go run ./tools/cmd/modcheck tidy [-w]                       # go mod tidy changes nothing (-w: apply it)
//	go run ./tools/cmd/modcheck proxy -dir DIR                  # write the proxy, print nothing else
//	go run ./tools/cmd/modcheck release all|MODULE...           # print the tags that release them together
//	go run ./tools/cmd/modcheck readme                          # README.md's module table and copied code are true
//
// The modules are those of versions.txt, each at its listed version. graph
// fails (exit 1) on a module that requires a module that requires it, on any
// replace directive in a go.mod, on a -leaf module that requires a sibling,
// and on a go.work that does not use every module and replace each at its
// listed version with its directory. tidy runs
// `go mod tidy` on copies of each go.mod and go.sum with the siblings
// resolved from a proxy of the working tree (never from the network or
// go.work; see modgraph.ProxyEnv) and fails on any change. release prints,
// dependencies first, the tags ("<dir>/<version>") that release the named
// modules ("all": every module but the examples) and fails when a tag exists
// or a named module requires a sibling version that is neither tagged (git
// tag in -root) nor named too. readme fails when the README's module table
// misses a go.mod of the tree or lists a directory without one, or when a
// code block marked "<!-- copy of FILE, region NAME -->" differs from the
// lines of FILE between "// NAME:begin" and "// NAME:end", or when a .go,
// .md or .json file cites a rule CONTRACT.md does not define, or a section
// sign, SPEC number or ADR the repository does not hold.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/babelqueue/babelqueue-go/tools/internal/modgraph"
	"github.com/babelqueue/babelqueue-go/tools/internal/readme"
	"github.com/babelqueue/babelqueue-go/tools/internal/versions"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "modcheck:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: modcheck graph|tidy|proxy|release|readme [flags]")
	}
	fs := flag.NewFlagSet("modcheck "+args[0], flag.ContinueOnError)
	root := fs.String("root", ".", "repository root holding versions.txt")
	leaf := fs.String("leaf", "", "graph: comma-separated modules that must require no sibling")
	write := fs.Bool("w", false, "tidy: write the tidy go.mod and go.sum back")
	dir := fs.String("dir", "", "proxy: directory to write the proxy into")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "readme" {
		return checkReadme(*root, stdout)
	}
	mods, err := load(*root)
	if err != nil {
		return err
	}
	switch args[0] {
	case "graph":
		fmt.Fprint(stdout, modgraph.Summary(mods))
		var leaves []string
		if *leaf != "" {
			leaves = strings.Split(*leaf, ",")
		}
		if err := errors.Join(modgraph.Check(mods, leaves), modgraph.CheckWork(*root, mods)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "modcheck: %d modules, no cycle, no replace directive, go.work agrees\n", len(mods))
		return nil
	case "tidy":
		return tidy(ctx, *root, mods, *write, stdout)
	case "release":
		set := fs.Args()
		if len(set) == 1 && set[0] == "all" {
			set = modgraph.Releasable(mods)
		}
		if len(set) == 0 {
			return fmt.Errorf("release: name the modules to release, or all")
		}
		tags, err := modgraph.ReleasePlan(mods, set, func(tag string) bool {
			return exec.CommandContext(ctx, "git", "-C", *root, "rev-parse", "-q", "--verify", "refs/tags/"+tag).Run() == nil
		})
		if err != nil {
			return err
		}
		for _, t := range tags {
			fmt.Fprintln(stdout, t)
		}
		return nil
	case "proxy":
		if *dir == "" {
			return fmt.Errorf("proxy: -dir is required")
		}
		return modgraph.WriteProxy(*root, *dir, mods)
	default:
		return fmt.Errorf("unknown command %q (graph, tidy, proxy, release, readme)", args[0])
	}
}

// checkReadme checks README.md under root against the tree.
func checkReadme(root string, stdout io.Writer) error {
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return err
	}
	dirs, err := readme.Modules(root)
	if err != nil {
		return err
	}
	rows, err := readme.TableModules(text)
	if err != nil {
		return err
	}
	copies, cerr := readme.CheckCopies(root, text)
	cited, rerr := readme.CheckCitations(root)
	if err := errors.Join(readme.CheckTable(dirs, rows), cerr, rerr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "modcheck: README.md lists the %d modules of the tree; %d copied code block(s) match their source; %d CONTRACT.md citations name a rule, no reference cites a document the repository lacks\n", len(dirs), copies, cited)
	return nil
}

func load(root string) ([]modgraph.Module, error) {
	f, err := os.Open(filepath.Join(root, "versions.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := versions.Parse(f)
	if err != nil {
		return nil, err
	}
	return modgraph.Load(root, l)
}

// tidy checks (or, with write, rewrites) every module's go.mod and go.sum.
// A rewrite changes what the proxy must hold for the modules that require
// the rewritten one, so writing repeats, each pass with a fresh proxy and
// module cache, until a pass finds every module tidy.
func tidy(ctx context.Context, root string, mods []modgraph.Module, write bool, stdout io.Writer) error {
	const passes = 4
	for pass := 1; ; pass++ {
		err := tidyPass(ctx, root, mods, false, stdout)
		if err == nil || !write || !errors.Is(err, modgraph.ErrUntidy) {
			if err == nil {
				fmt.Fprintf(stdout, "modcheck: %d modules tidy\n", len(mods))
			}
			return err
		}
		if pass == passes {
			return fmt.Errorf("still not tidy after %d passes: %w", passes, err)
		}
		if err := tidyPass(ctx, root, mods, true, stdout); err != nil {
			return err
		}
		if mods, err = load(root); err != nil {
			return err
		}
	}
}

func tidyPass(ctx context.Context, root string, mods []modgraph.Module, write bool, stdout io.Writer) error {
	tmp, err := os.MkdirTemp("", "modcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // the module cache is written with -modcacherw, so it can be removed
	proxy := filepath.Join(tmp, "proxy")
	if err := modgraph.WriteProxy(root, proxy, mods); err != nil {
		return err
	}
	upstream, err := modgraph.GoEnv(ctx, "GOPROXY")
	if err != nil {
		return err
	}
	shared, err := modgraph.GoEnv(ctx, "GOMODCACHE")
	if err != nil {
		return err
	}
	env := modgraph.ProxyEnv(os.Environ(), proxy, shared, upstream, filepath.Join(tmp, "modcache"))
	return modgraph.Tidy(ctx, root, mods, modgraph.TidyOptions{Env: env, Write: write, Log: stdout})
}
