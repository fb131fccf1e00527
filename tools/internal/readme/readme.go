// Package readme checks that the repository's README.md tells the truth
// about the tree: its module table names every module (every go.mod) and
// nothing else, and each code block marked as a copy of a source file's
// region is that region, byte for byte.
package readme

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ErrStale is matched by every disagreement between the README and the tree.
var ErrStale = errors.New("README.md disagrees with the tree")

// Modules returns the directories, relative to root and with slashes, of
// every go.mod under root; directories whose name starts with "." or "_",
// and testdata directories, are skipped, as the go command skips them.
func Modules(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root {
			n := d.Name()
			if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// tableRow matches a row of the module table: its first cell is the
// module directory in backquotes.
var tableRow = regexp.MustCompile("^\\| `([^`]+)` \\|")

// TableModules returns the module directories that the table under the
// "## Modules" heading of readme lists, in order.
func TableModules(readme []byte) ([]string, error) {
	var dirs []string
	in := false
	for _, line := range strings.Split(string(readme), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.TrimSpace(line) == "## Modules"
		case in:
			if m := tableRow.FindStringSubmatch(line); m != nil {
				dirs = append(dirs, m[1])
			}
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no module table under \"## Modules\"", ErrStale)
	}
	return dirs, nil
}

// CheckTable reports every module missing from the table, every row
// that names no module, and every row listed twice.
func CheckTable(modules, table []string) error {
	has := map[string]bool{}
	var errs []error
	for _, d := range table {
		if has[d] {
			errs = append(errs, fmt.Errorf("%w: the module table lists %s twice", ErrStale, d))
		}
		has[d] = true
	}
	isMod := map[string]bool{}
	for _, d := range modules {
		isMod[d] = true
		if !has[d] {
			errs = append(errs, fmt.Errorf("%w: %s/go.mod is not in the module table (add a row: what it is for, its import path, its version)", ErrStale, d))
		}
	}
	for _, d := range table {
		if !isMod[d] {
			errs = append(errs, fmt.Errorf("%w: the module table lists %s, which has no go.mod", ErrStale, d))
		}
	}
	return errors.Join(errs...)
}

// copyMarker precedes a code block that copies a region of a file:
// <!-- copy of examples/quickstart/main.go, region quickstart -->
var copyMarker = regexp.MustCompile(`^<!-- copy of (\S+), region (\S+) -->$`)

// CheckCopies checks that each code block of readme marked with a copy
// marker is the region of its file between the lines "// NAME:begin"
// and "// NAME:end" (both left out), files read below root.
func CheckCopies(root string, readme []byte) (int, error) {
	lines := strings.Split(string(readme), "\n")
	var errs []error
	n := 0
	for i := 0; i < len(lines); i++ {
		m := copyMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		n++
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			errs = append(errs, fmt.Errorf("%w: line %d: the copy marker of %s is not followed by a code block", ErrStale, i+1, m[1]))
			continue
		}
		start := i + 2
		end := start
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		block := strings.Join(lines[start:end], "\n")
		region, err := Region(filepath.Join(root, filepath.FromSlash(m[1])), m[2])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if block != region {
			errs = append(errs, fmt.Errorf("%w: the code block at line %d differs from %s, region %s, at its line %d (copy the region into the README)",
				ErrStale, start+1, m[1], m[2], firstDiffLine(block, region)))
		}
		i = end
	}
	return n, errors.Join(errs...)
}

// Region returns the lines of file between "// name:begin" and
// "// name:end", without them and without a trailing blank line.
func Region(file, name string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	begin, end := []byte("// "+name+":begin\n"), []byte("\n// "+name+":end")
	i := bytes.Index(b, begin)
	j := bytes.Index(b, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("%w: %s has no region %s (// %s:begin ... // %s:end)", ErrStale, file, name, name, name)
	}
	return strings.TrimRight(string(b[i+len(begin):j]), "\n"), nil
}

func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
