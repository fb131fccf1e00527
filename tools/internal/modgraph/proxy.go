package modgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// WriteProxy writes a file-based module proxy (the layout GOPROXY=file://dir
// reads: <escaped module path>/@v/list, <version>.info, .mod and .zip) that
// holds every module of mods at its Version, built from the working tree
// under root. The files of a module are those git lists under its directory
// (tracked, and untracked but not ignored) that exist on disk, so a module
// zip holds what a tag of the current tree would hold; files of nested
// modules are left out, as the module zip rules require.
func WriteProxy(root, dir string, mods []Module) error {
	stamp := time.Now().UTC().Format(time.RFC3339)
	for _, m := range mods {
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return fmt.Errorf("modgraph: proxy: %w", err)
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return fmt.Errorf("modgraph: proxy: %w", err)
		}
		ev, err := module.EscapeVersion(m.Version)
		if err != nil {
			return fmt.Errorf("modgraph: proxy %s: %w", m.Dir, err)
		}
		info, err := json.Marshal(struct{ Version, Time string }{m.Version, stamp})
		if err != nil {
			return fmt.Errorf("modgraph: proxy %s: %w", m.Dir, err)
		}
		if err := os.WriteFile(filepath.Join(vdir, ev+".info"), info, 0o644); err != nil {
			return fmt.Errorf("modgraph: proxy %s: %w", m.Dir, err)
		}
		if err := os.WriteFile(filepath.Join(vdir, ev+".mod"), m.GoMod, 0o644); err != nil {
			return fmt.Errorf("modgraph: proxy %s: %w", m.Dir, err)
		}
		if err := os.WriteFile(filepath.Join(vdir, "list"), []byte(m.Version+"\n"), 0o644); err != nil {
			return fmt.Errorf("modgraph: proxy %s: %w", m.Dir, err)
		}
		if err := writeZip(root, m, filepath.Join(vdir, ev+".zip")); err != nil {
			return err
		}
	}
	return nil
}

func writeZip(root string, m Module, out string) error {
	files, err := moduleFiles(root, m.Dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := zip.Create(&buf, module.Version{Path: m.Path, Version: m.Version}, files); err != nil {
		return fmt.Errorf("modgraph: zip of %s: %w", m.Dir, err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("modgraph: zip of %s: %w", m.Dir, err)
	}
	return nil
}

// moduleFiles lists the files git knows under root/dir (tracked, or
// untracked and not ignored) that exist, relative to root/dir.
func moduleFiles(root, dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = filepath.Join(root, filepath.FromSlash(dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("modgraph: listing the files of %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	var files []zip.File
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" || seen[rel] {
			continue
		}
		seen[rel] = true
		abs := filepath.Join(cmd.Dir, filepath.FromSlash(rel))
		if _, err := os.Lstat(abs); err != nil {
			continue // deleted in the working tree
		}
		files = append(files, diskFile{rel: path.Clean(rel), abs: abs})
	}
	return files, nil
}

type diskFile struct{ rel, abs string }

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
