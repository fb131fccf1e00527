// Package versions reads the repository's module version list and checks
// that every module requires its siblings at the listed versions.
package versions

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ModulePrefix is the import path prefix shared by every module of the
// repository.
const ModulePrefix = "github.com/babelqueue/babelqueue-go/"

// ErrMismatch marks a sibling requirement that disagrees with the version list.
var ErrMismatch = errors.New("versions: requirement does not match the version list")

var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// List maps a module directory (relative to the repository root) to its
// current version.
type List map[string]string

// Parse reads a version list: one "<directory> <version>" pair per line,
// blank lines and lines starting with # ignored. Versions must be semantic
// versions with a leading v.
func Parse(r io.Reader) (List, error) {
	l := List{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("versions: line %d: want \"<directory> <version>\", got %q", line, text)
		}
		if !semver.MatchString(f[1]) {
			return nil, fmt.Errorf("versions: line %d: %q is not a semantic version like v1.2.3", line, f[1])
		}
		if _, dup := l[f[0]]; dup {
			return nil, fmt.Errorf("versions: line %d: module %q listed twice", line, f[0])
		}
		l[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("versions: reading list: %w", err)
	}
	return l, nil
}

// Requirements returns the sibling requirements of a go.mod file's content:
// module directory (path after ModulePrefix) → required version.
func Requirements(gomod string) map[string]string {
	out := map[string]string{}
	inBlock := false
	for _, raw := range strings.Split(gomod, "\n") {
		line := strings.TrimSpace(raw)
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "require (":
			inBlock = true
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		}
		var f []string
		if inBlock {
			f = strings.Fields(line)
		} else if strings.HasPrefix(line, "require ") {
			f = strings.Fields(strings.TrimPrefix(line, "require "))
		}
		if len(f) == 2 && strings.HasPrefix(f[0], ModulePrefix) {
			out[strings.TrimPrefix(f[0], ModulePrefix)] = f[1]
		}
	}
	return out
}

// Check verifies, under the repository root, that every listed module has
// a go.mod declaring its expected path and that every requirement on a
// sibling names the listed version. It returns every problem found, joined;
// each wraps ErrMismatch or describes a missing file.
func Check(root string, l List) error {
	var errs []error
	dirs := make([]string, 0, len(l))
	for d := range l {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		path := filepath.Join(root, dir, "go.mod")
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("versions: module %s: %w", dir, err))
			continue
		}
		want := "module " + ModulePrefix + dir
		if !strings.Contains(string(b), want+"\n") && !strings.HasSuffix(string(b), want) {
			errs = append(errs, fmt.Errorf("versions: %s does not declare %q", path, want))
		}
		reqs := Requirements(string(b))
		names := make([]string, 0, len(reqs))
		for n := range reqs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, sib := range names {
			got := reqs[sib]
			listed, ok := l[sib]
			if !ok {
				errs = append(errs, fmt.Errorf("%w: %s requires %s%s, which is not in the list", ErrMismatch, dir, ModulePrefix, sib))
				continue
			}
			if got != listed {
				errs = append(errs, fmt.Errorf("%w: %s requires %s %s, the list says %s", ErrMismatch, dir, sib, got, listed))
			}
		}
	}
	return errors.Join(errs...)
}
