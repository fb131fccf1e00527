package modgraph

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrRelease marks a release set that cannot be tagged as asked.
var ErrRelease = errors.New("modgraph: release")

// Tag is the tag of a module at its version: "<dir>/<version>".
func (m Module) Tag() string { return m.Dir + "/" + m.Version }

// ReleasePlan returns the tags that release the modules named in set
// together, dependencies first (a module's tag after the tags of the
// siblings it requires that are in the set). tagged reports whether a tag
// already exists. It fails (ErrRelease) when a named module is unknown, when
// its tag exists (bump versions.txt first), or when it requires a sibling at
// a version that is neither tagged nor released in the same set: such
// modules must move together.
func ReleasePlan(mods []Module, set []string, tagged func(tag string) bool) ([]string, error) {
	byDir := map[string]Module{}
	for _, m := range mods {
		byDir[m.Dir] = m
	}
	in := map[string]bool{}
	var errs []error
	for _, d := range set {
		if _, ok := byDir[d]; !ok {
			errs = append(errs, fmt.Errorf("%w: %s is not in versions.txt", ErrRelease, d))
			continue
		}
		in[d] = true
	}
	dirs := make([]string, 0, len(in))
	for d := range in {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		m := byDir[d]
		if tagged(m.Tag()) {
			errs = append(errs, fmt.Errorf("%w: tag %s exists; bump %s in versions.txt first", ErrRelease, m.Tag(), d))
		}
		for _, s := range m.Sibling {
			sib, ok := byDir[s]
			if !ok || in[s] || tagged(sib.Tag()) {
				continue
			}
			errs = append(errs, fmt.Errorf("%w: %s requires %s %s, which is neither tagged nor in this release; release them together", ErrRelease, d, s, sib.Version))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Dependencies first; the graph is acyclic (Check), ties by name.
	var order []string
	done := map[string]bool{}
	var visit func(d string, depth int) error
	visit = func(d string, depth int) error {
		if done[d] {
			return nil
		}
		if depth > len(dirs) {
			return fmt.Errorf("%w: module cycle through %s", ErrRelease, d)
		}
		for _, s := range byDir[d].Sibling {
			if in[s] {
				if err := visit(s, depth+1); err != nil {
					return err
				}
			}
		}
		done[d] = true
		order = append(order, byDir[d].Tag())
		return nil
	}
	for _, d := range dirs {
		if err := visit(d, 0); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Releasable returns the directories of the modules that are released:
// every module except the examples (examples/...) and modules that hold
// only integration tests (a directory named integration, as otel/integration,
// and interop, the tests against the other SDKs).
func Releasable(mods []Module) []string {
	var out []string
	for _, m := range mods {
		if strings.HasPrefix(m.Dir, "examples/") || m.Dir == "integration" || m.Dir == "interop" || strings.HasSuffix(m.Dir, "/integration") {
			continue
		}
		out = append(out, m.Dir)
	}
	return out
}
