package main

import (
	"os"
	"path/filepath"
	"testing"
)

// generate runs a file-writing subcommand (runCerts, runToken) with -dir set
// to a fresh directory followed by args. It returns the directory and a
// reader of its files that fails the test when a file cannot be read.
func generate(t *testing.T, run func([]string) error, args ...string) (dir string, read func(name string) []byte) {
	t.Helper()
	dir = t.TempDir()
	if err := run(append([]string{"-dir", dir}, args...)); err != nil {
		t.Fatal(err)
	}
	return dir, func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}
