// Package modgraph checks the graph of the repository's modules: no module
// requires a module that requires it, no released module carries a replace
// directive, and the modules meant to stand alone require no sibling. It
// also writes a file-based module proxy of the working tree (proxy.go) and
// checks through it that every go.mod is tidy (tidy.go).
//
// The graph is read from the go.mod files themselves: with module graph
// pruning (go 1.17 and later) a tidy go.mod lists every module that provides
// a package to the module's packages and tests, so the sibling requirements a
// go.mod lists are exactly the sibling edges `go mod graph` reports for it.
package modgraph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/babelqueue/babelqueue-go/tools/internal/versions"
)

// ErrCycle marks a chain of sibling requirements that returns to its start.
var ErrCycle = errors.New("modgraph: module cycle")

// ErrReplace marks a replace directive in a module's go.mod. A replace
// directive makes `go install <pkg>@<version>` of that module fail, and
// go.work takes its place during development.
var ErrReplace = errors.New("modgraph: replace directive")

// ErrLeaf marks a module that must require no sibling but does.
var ErrLeaf = errors.New("modgraph: module must require no sibling")

// Module is one module of the repository as its go.mod describes it.
type Module struct {
	Dir     string   // directory relative to the repository root, slash-separated ("kafka")
	Path    string   // module path
	Version string   // version from versions.txt
	GoMod   []byte   // the go.mod file's content
	Go      string   // the go directive ("1.25.0")
	Sibling []string // directories of the sibling modules it requires (direct or indirect), sorted
	Replace []string // module paths it replaces
}

// Load reads the go.mod of every module in the version list. Each go.mod
// must declare the path versions.ModulePrefix + directory.
func Load(root string, l versions.List) ([]Module, error) {
	dirs := make([]string, 0, len(l))
	for d := range l {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var mods []Module
	var errs []error
	for _, dir := range dirs {
		file := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
		b, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("modgraph: module %s: %w", dir, err))
			continue
		}
		m, err := parse(dir, l[dir], file, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		mods = append(mods, m)
	}
	return mods, errors.Join(errs...)
}

func parse(dir, version, file string, b []byte) (Module, error) {
	f, err := modfile.Parse(file, b, nil)
	if err != nil {
		return Module{}, fmt.Errorf("modgraph: %w", err)
	}
	m := Module{Dir: dir, Version: version, GoMod: b}
	if f.Module != nil {
		m.Path = f.Module.Mod.Path
	}
	if want := versions.ModulePrefix + dir; m.Path != want {
		return Module{}, fmt.Errorf("modgraph: %s declares module %q, want %q", file, m.Path, want)
	}
	if f.Go != nil {
		m.Go = f.Go.Version
	}
	seen := map[string]bool{}
	for _, r := range f.Require {
		if sib, ok := strings.CutPrefix(r.Mod.Path, versions.ModulePrefix); ok && !seen[sib] {
			seen[sib] = true
			m.Sibling = append(m.Sibling, sib)
		}
	}
	sort.Strings(m.Sibling)
	for _, r := range f.Replace {
		m.Replace = append(m.Replace, r.Old.Path)
	}
	return m, nil
}

// Cycles returns every elementary cycle of sibling requirements among mods,
// each as the directories along it with the first repeated at the end
// ("kafka", "tools", "kafka"), rotated to start at its smallest directory and
// sorted. Requirements on modules not in mods are ignored.
func Cycles(mods []Module) [][]string {
	edges := map[string][]string{}
	var nodes []string
	for _, m := range mods {
		nodes = append(nodes, m.Dir)
	}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n] = true
	}
	for _, m := range mods {
		for _, s := range m.Sibling {
			if known[s] {
				edges[m.Dir] = append(edges[m.Dir], s)
			}
		}
	}
	sort.Strings(nodes)
	found := map[string][]string{}
	// Search from each start node only through nodes not smaller than it, so
	// every elementary cycle is found once, from its smallest node.
	for _, start := range nodes {
		var path []string
		on := map[string]bool{}
		var walk func(n string)
		walk = func(n string) {
			path = append(path, n)
			on[n] = true
			for _, next := range edges[n] {
				switch {
				case next == start:
					c := append(append([]string(nil), path...), start)
					found[strings.Join(c, " ")] = c
				case next > start && !on[next]:
					walk(next)
				}
			}
			on[n] = false
			path = path[:len(path)-1]
		}
		walk(start)
	}
	keys := make([]string, 0, len(found))
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, found[k])
	}
	return out
}

// Check reports every module cycle (ErrCycle), every replace directive
// (ErrReplace) and every sibling requirement of a module named in leaves
// (ErrLeaf), joined; nil when there is none.
func Check(mods []Module, leaves []string) error {
	var errs []error
	for _, c := range Cycles(mods) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrCycle, strings.Join(c, " → ")))
	}
	leaf := map[string]bool{}
	for _, l := range leaves {
		leaf[l] = true
	}
	for _, m := range mods {
		for _, r := range m.Replace {
			errs = append(errs, fmt.Errorf("%w: %s/go.mod replaces %s (go.work takes its place)", ErrReplace, m.Dir, r))
		}
		if leaf[m.Dir] && len(m.Sibling) > 0 {
			errs = append(errs, fmt.Errorf("%w: %s requires %s", ErrLeaf, m.Dir, strings.Join(m.Sibling, ", ")))
		}
		delete(leaf, m.Dir)
	}
	for l := range leaf {
		errs = append(errs, fmt.Errorf("%w: %s is not in the version list", ErrLeaf, l))
	}
	return errors.Join(errs...)
}

// Summary renders each module's sibling requirements, one module a line:
// "kafka (go 1.25.0) -> brokertest, conformance, core".
func Summary(mods []Module) string {
	var b strings.Builder
	for _, m := range mods {
		sib := "(none)"
		if len(m.Sibling) > 0 {
			sib = strings.Join(m.Sibling, ", ")
		}
		fmt.Fprintf(&b, "%s (go %s) -> %s\n", m.Dir, m.Go, sib)
	}
	return b.String()
}

// ErrWork marks a go.work that does not use every module or does not
// replace each at exactly its listed version with its directory.
var ErrWork = errors.New("modgraph: go.work")

// CheckWork verifies root/go.work: it uses every module of mods and has, for
// each, the replace directive "<path> <version> => ./<dir>" at the version
// mods lists (the version its siblings require, not yet published while it
// is untagged) and no other replacement of a module of the repository.
func CheckWork(root string, mods []Module) error {
	file := filepath.Join(root, "go.work")
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWork, err)
	}
	w, err := modfile.ParseWork(file, b, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWork, err)
	}
	used := map[string]bool{}
	for _, u := range w.Use {
		used[filepath.ToSlash(filepath.Clean(u.Path))] = true
	}
	type repl struct{ version, dir string }
	replaced := map[string][]repl{}
	for _, r := range w.Replace {
		replaced[r.Old.Path] = append(replaced[r.Old.Path], repl{r.Old.Version, filepath.ToSlash(filepath.Clean(r.New.Path))})
	}
	var errs []error
	for _, m := range mods {
		if !used[m.Dir] {
			errs = append(errs, fmt.Errorf("%w: no use directive for ./%s", ErrWork, m.Dir))
		}
		rs := replaced[m.Path]
		delete(replaced, m.Path)
		if len(rs) != 1 || rs[0].version != m.Version || rs[0].dir != m.Dir {
			errs = append(errs, fmt.Errorf("%w: want exactly \"replace %s %s => ./%s\", have %v", ErrWork, m.Path, m.Version, m.Dir, rs))
		}
	}
	for p := range replaced {
		if strings.HasPrefix(p, versions.ModulePrefix) {
			errs = append(errs, fmt.Errorf("%w: replaces %s, which is not in the version list", ErrWork, p))
		}
	}
	return errors.Join(errs...)
}
