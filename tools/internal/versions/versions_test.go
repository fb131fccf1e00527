package versions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	l, err := Parse(strings.NewReader("# comment\n\ncore v1.2.0\nkafka  v1.6.0-rc.1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l["core"] != "v1.2.0" || l["kafka"] != "v1.6.0-rc.1" || len(l) != 2 {
		t.Fatalf("got %v", l)
	}
	for _, bad := range []string{"core 1.2.0\n", "core v1.2\n", "core\n", "core v1.0.0\ncore v1.0.1\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("Parse(%q) accepted a bad list", bad)
		}
	}
}

func TestRequirements(t *testing.T) {
	mod := "module " + ModulePrefix + "kafka\n\ngo 1.25\n\nrequire " + ModulePrefix + "core v0.3.0\n\nrequire (\n\tgithub.com/x/y v1.0.0\n\t" + ModulePrefix + "tools v0.2.0 // indirect\n)\n"
	got := Requirements(mod)
	if len(got) != 2 || got["core"] != "v0.3.0" || got["tools"] != "v0.2.0" {
		t.Fatalf("got %v", got)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(dir, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "go.mod"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("core", "module "+ModulePrefix+"core\n\ngo 1.25\n")
	write("kafka", "module "+ModulePrefix+"kafka\n\nrequire "+ModulePrefix+"core v0.1.0\n")
	if err := Check(root, List{"core": "v0.1.0", "kafka": "v0.1.0"}); err != nil {
		t.Fatalf("consistent tree rejected: %v", err)
	}
	err := Check(root, List{"core": "v0.2.0", "kafka": "v0.1.0"})
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("stale requirement not reported: %v", err)
	}
	if err := Check(root, List{"core": "v0.1.0", "kafka": "v0.1.0", "pulsar": "v0.1.0"}); err == nil {
		t.Fatal("missing module not reported")
	}
}

func TestRepositoryList(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	f, err := os.Open(filepath.Join(root, "versions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(root, l); err != nil {
		t.Fatalf("the repository disagrees with versions.txt:\n%v", err)
	}
}
