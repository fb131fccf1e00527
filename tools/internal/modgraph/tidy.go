package modgraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/babelqueue/babelqueue-go/tools/internal/versions"
)

// ErrUntidy marks a go.mod or go.sum that `go mod tidy` would change.
var ErrUntidy = errors.New("modgraph: not tidy")

// ProxyEnv returns the environment, based on base, under which the go
// command resolves the repository's modules from the file proxy at proxyDir
// only, never from the network or a workspace: GOWORK=off, GOPROXY lists
// proxyDir first, then the shared module cache's download directory (a
// file proxy too, so modules already downloaded are not fetched again),
// then upstream (the proxy list the machine uses) for the other modules.
// Sums of the repository's modules are not looked up in a checksum
// database (GONOSUMDB); other modules are checked as usual. modcache is
// the GOMODCACHE to use: a fresh one, so that no earlier copy of a module
// at the same version is taken from the cache.
func ProxyEnv(base []string, proxyDir, sharedCache, upstream, modcache string) []string {
	list := []string{fileURL(proxyDir)}
	if sharedCache != "" {
		if st, err := os.Stat(filepath.Join(sharedCache, "cache", "download")); err == nil && st.IsDir() {
			list = append(list, fileURL(filepath.Join(sharedCache, "cache", "download")))
		}
	}
	if upstream != "" {
		list = append(list, upstream)
	}
	set := map[string]string{
		"GOWORK":      "off",
		"GOPROXY":     strings.Join(list, ","),
		"GONOPROXY":   "",
		"GOPRIVATE":   "",
		"GONOSUMDB":   strings.TrimSuffix(versions.ModulePrefix, "/"),
		"GOFLAGS":     "-mod=mod -modcacherw",
		"GOMODCACHE":  modcache,
		"GOTOOLCHAIN": "local",
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}

func fileURL(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return "file://" + filepath.ToSlash(abs)
}

// GoEnv returns `go env NAME` as the go command in the caller's environment
// sees it.
func GoEnv(ctx context.Context, name string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("modgraph: go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// TidyOptions configures Tidy.
type TidyOptions struct {
	Env   []string  // environment of the go command (see ProxyEnv)
	Write bool      // write the tidy go.mod and go.sum back instead of reporting them
	Log   io.Writer // progress, one line per module; nil for none
}

// Tidy runs `go mod tidy` for every module of mods on copies of its go.mod
// and go.sum (-modfile), so the tree is not touched, and reports (ErrUntidy)
// every module whose files it would change. The go.sum comparison leaves out
// the lines of the repository's own modules: resolved from the working tree
// their hashes change with every commit, so go.sum files hold none (the
// workspace never needs them) and a committed sibling line is reported. With
// opts.Write the tidy files are written back, sibling lines dropped.
func Tidy(ctx context.Context, root string, mods []Module, opts TidyOptions) error {
	tmp, err := os.MkdirTemp("", "modgraph-tidy-")
	if err != nil {
		return fmt.Errorf("modgraph: tidy: %w", err)
	}
	defer os.RemoveAll(tmp)
	var errs []error
	for i, m := range mods {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "tidy %s\n", m.Dir)
		}
		if err := tidyOne(ctx, root, tmp, i, m, opts); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func tidyOne(ctx context.Context, root, tmp string, i int, m Module, opts TidyOptions) error {
	dir := filepath.Join(root, filepath.FromSlash(m.Dir))
	origMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
	}
	origSum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
	}
	modCopy := filepath.Join(tmp, fmt.Sprintf("m%d.mod", i))
	sumCopy := strings.TrimSuffix(modCopy, ".mod") + ".sum"
	if err := os.WriteFile(modCopy, origMod, 0o644); err != nil {
		return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
	}
	// The copy leaves out sibling hashes: resolved from the working tree, a
	// sibling's hash differs from any recorded one.
	if err := os.WriteFile(sumCopy, StripSiblingSums(origSum), 0o644); err != nil {
		return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "tidy", "-modfile="+modCopy)
	cmd.Dir = dir
	cmd.Env = opts.Env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("modgraph: go mod tidy in %s: %w\n%s", m.Dir, err, strings.TrimSpace(out.String()))
	}
	newMod, err := os.ReadFile(modCopy)
	if err != nil {
		return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
	}
	newSum, err := os.ReadFile(sumCopy)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
	}
	newSum = StripSiblingSums(newSum)
	modSame, sumSame := bytes.Equal(origMod, newMod), bytes.Equal(origSum, newSum)
	if modSame && sumSame {
		return nil
	}
	if opts.Write {
		if !modSame {
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), newMod, 0o644); err != nil {
				return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
			}
		}
		if !sumSame {
			if len(newSum) == 0 {
				err = os.Remove(filepath.Join(dir, "go.sum"))
				if errors.Is(err, os.ErrNotExist) {
					err = nil
				}
			} else {
				err = os.WriteFile(filepath.Join(dir, "go.sum"), newSum, 0o644)
			}
			if err != nil {
				return fmt.Errorf("modgraph: tidy %s: %w", m.Dir, err)
			}
		}
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, "tidy %s: rewritten\n", m.Dir)
		}
		return nil
	}
	var msg strings.Builder
	if !modSame {
		fmt.Fprintf(&msg, "\n  %s/go.mod:%s", m.Dir, lineDiff(origMod, newMod))
	}
	if !sumSame {
		fmt.Fprintf(&msg, "\n  %s/go.sum:%s", m.Dir, lineDiff(origSum, newSum))
	}
	return fmt.Errorf("%w: %s (make tidy rewrites it)%s", ErrUntidy, m.Dir, msg.String())
}

// StripSiblingSums drops the go.sum lines of the repository's own modules.
func StripSiblingSums(sum []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(sum), "\n") {
		if line == "" || strings.HasPrefix(line, versions.ModulePrefix) {
			continue
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

// lineDiff lists the lines only in a ("-") and only in b ("+"), in order.
func lineDiff(a, b []byte) string {
	count := func(s []byte) map[string]int {
		c := map[string]int{}
		for _, l := range strings.Split(strings.TrimRight(string(s), "\n"), "\n") {
			c[l]++
		}
		return c
	}
	ca, cb := count(a), count(b)
	var out strings.Builder
	emit := func(s []byte, other map[string]int, sign string) {
		for _, l := range strings.Split(strings.TrimRight(string(s), "\n"), "\n") {
			if other[l] > 0 {
				other[l]--
				continue
			}
			if strings.TrimSpace(l) == "" {
				continue
			}
			fmt.Fprintf(&out, "\n    %s %s", sign, strings.TrimSpace(l))
		}
	}
	emit(a, cb, "-")
	emit(b, ca, "+")
	if out.Len() == 0 {
		return "\n    (formatting only)"
	}
	return out.String()
}
