package modgraph

import (
	"archive/zip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/tools/internal/versions"
)

// fakeRepo writes a git repository with two sibling modules: core (no
// requirement) and kafka, whose code imports core and whose go.mod is given.
func fakeRepo(t *testing.T, kafkaMod string) (string, []Module) {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".gitignore"), "*.out\n")
	writeFile(t, filepath.Join(root, "core", "go.mod"), "module "+versions.ModulePrefix+"core\n\ngo 1.25\n")
	writeFile(t, filepath.Join(root, "core", "core.go"), "package core\n\n// V is a value.\nconst V = 1\n")
	writeFile(t, filepath.Join(root, "core", "build.out"), "ignored by git\n")
	writeFile(t, filepath.Join(root, "core", "nested", "go.mod"), "module example.com/nested\n")
	writeFile(t, filepath.Join(root, "core", "nested", "n.go"), "package nested\n")
	writeFile(t, filepath.Join(root, "kafka", "go.mod"), kafkaMod)
	writeFile(t, filepath.Join(root, "kafka", "kafka.go"), "package kafka\n\nimport \"github.com/babelqueue/babelqueue-go/core\"\n\n// V is core's value.\nconst V = core.V\n")
	git := exec.Command("git", "init", "-q", root)
	if out, err := git.CombinedOutput(); err != nil {
		t.Skipf("git is needed to list a module's files: %v %s", err, out)
	}
	mods, err := Load(root, versions.List{"core": "v0.1.0", "kafka": "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	return root, mods
}

func TestWriteProxyLayout(t *testing.T) {
	root, mods := fakeRepo(t, "module "+versions.ModulePrefix+"kafka\n\ngo 1.25\n\nrequire "+versions.ModulePrefix+"core v0.1.0\n")
	dir := t.TempDir()
	if err := WriteProxy(root, dir, mods); err != nil {
		t.Fatal(err)
	}
	v := filepath.Join(dir, "github.com", "babelqueue", "babelqueue-go", "core", "@v")
	for _, name := range []string{"list", "v0.1.0.info", "v0.1.0.mod", "v0.1.0.zip"} {
		if _, err := os.Stat(filepath.Join(v, name)); err != nil {
			t.Errorf("proxy lacks %s: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(v, "list")); string(b) != "v0.1.0\n" {
		t.Errorf("list = %q", b)
	}
	z, err := zip.OpenReader(filepath.Join(v, "v0.1.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	prefix := versions.ModulePrefix + "core@v0.1.0/"
	want := []string{prefix + "core.go", prefix + "go.mod"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("zip holds %v, want %v (no ignored file, no nested module)", names, want)
	}
}

// testEnv resolves only from the local proxy: no upstream, no shared cache.
func testEnv(t *testing.T, root string, mods []Module) []string {
	t.Helper()
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	if err := WriteProxy(root, proxy, mods); err != nil {
		t.Fatal(err)
	}
	return ProxyEnv(os.Environ(), proxy, "", "off", filepath.Join(tmp, "modcache"))
}

func TestTidyReportsAndRewrites(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// kafka imports core but its go.mod does not require it.
	root, mods := fakeRepo(t, "module "+versions.ModulePrefix+"kafka\n\ngo 1.25\n")
	err := Tidy(ctx, root, mods, TidyOptions{Env: testEnv(t, root, mods)})
	if !errors.Is(err, ErrUntidy) || !strings.Contains(err.Error(), "+ require "+versions.ModulePrefix+"core v0.1.0") {
		t.Fatalf("missing requirement not reported: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "kafka", "go.mod")); strings.Contains(string(b), "require") {
		t.Fatalf("a check rewrote go.mod:\n%s", b)
	}
	if err := Tidy(ctx, root, mods, TidyOptions{Env: testEnv(t, root, mods), Write: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "kafka", "go.mod"))
	if !strings.Contains(string(b), "require "+versions.ModulePrefix+"core v0.1.0") {
		t.Fatalf("rewrite did not add the requirement:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(root, "kafka", "go.sum")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("go.sum with only sibling lines was written: %v", err)
	}
	if err := Tidy(ctx, root, mods, TidyOptions{Env: testEnv(t, root, mods)}); err != nil {
		t.Fatalf("rewritten tree still untidy: %v", err)
	}
	// A committed sibling hash is reported: it changes with every commit.
	writeFile(t, filepath.Join(root, "kafka", "go.sum"), versions.ModulePrefix+"core v0.1.0/go.mod h1:AAAA=\n")
	if err := Tidy(ctx, root, mods, TidyOptions{Env: testEnv(t, root, mods)}); !errors.Is(err, ErrUntidy) {
		t.Fatalf("sibling go.sum line not reported: %v", err)
	}
}

func TestStripSiblingSums(t *testing.T) {
	in := "github.com/x/y v1.0.0 h1:a=\n" + versions.ModulePrefix + "core v0.1.0 h1:b=\n" + versions.ModulePrefix + "core v0.1.0/go.mod h1:c=\ngithub.com/x/y v1.0.0/go.mod h1:d=\n"
	want := "github.com/x/y v1.0.0 h1:a=\ngithub.com/x/y v1.0.0/go.mod h1:d=\n"
	if got := string(StripSiblingSums([]byte(in))); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
