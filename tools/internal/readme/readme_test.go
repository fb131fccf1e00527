package readme

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root, path, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const table = "# X\n\n## Modules\n\n| module | what |\n| --- | --- |\n| `core` | c |\n| `kafka` | k |\n\n## Other\n\n| `notamodule` | x |\n"

func TestModulesAndTable(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"core", "kafka", "outbox/integration", ".hidden/x", "core/testdata/m"} {
		write(t, root, d+"/go.mod", "module x\n")
	}
	mods, err := Modules(root)
	if err != nil || strings.Join(mods, " ") != "core kafka outbox/integration" {
		t.Fatalf("Modules = %v, %v", mods, err)
	}
	rows, err := TableModules([]byte(table))
	if err != nil || strings.Join(rows, " ") != "core kafka" {
		t.Fatalf("TableModules = %v, %v", rows, err)
	}
	err = CheckTable(mods, rows)
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "outbox/integration/go.mod is not in the module table") {
		t.Errorf("missing module: %v", err)
	}
	err = CheckTable([]string{"core"}, []string{"core", "kafka", "core"})
	if err == nil || !strings.Contains(err.Error(), "lists kafka, which has no go.mod") || !strings.Contains(err.Error(), "lists core twice") {
		t.Errorf("extra rows: %v", err)
	}
	if err := CheckTable([]string{"core", "kafka"}, rows); err != nil {
		t.Errorf("agreeing table: %v", err)
	}
	if _, err := TableModules([]byte("# X\n")); err == nil {
		t.Error("no table: no error")
	}
}

func TestCheckCopies(t *testing.T) {
	root := t.TempDir()
	write(t, root, "ex/main.go", "package main\n\n// q:begin\nfunc run() {\n\tdo()\n}\n\n// q:end\n")
	good := "text\n<!-- copy of ex/main.go, region q -->\n```go\nfunc run() {\n\tdo()\n}\n```\n"
	if n, err := CheckCopies(root, []byte(good)); n != 1 || err != nil {
		t.Errorf("equal copy: %d %v", n, err)
	}
	bad := strings.Replace(good, "\tdo()", "\tdo(1)", 1)
	if _, err := CheckCopies(root, []byte(bad)); !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "at its line 2") {
		t.Errorf("changed copy: %v", err)
	}
	missing := strings.Replace(good, "region q", "region r", 1)
	if _, err := CheckCopies(root, []byte(missing)); err == nil || !strings.Contains(err.Error(), "has no region r") {
		t.Errorf("missing region: %v", err)
	}
}
