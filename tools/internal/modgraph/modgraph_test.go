package modgraph

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/tools/internal/versions"
)

func mod(dir string, sib ...string) Module {
	return Module{Dir: dir, Path: versions.ModulePrefix + dir, Version: "v0.1.0", Sibling: sib}
}

func TestCyclesFindsTheToolsCycles(t *testing.T) {
	// The graph before brokertest moved out of tools.
	mods := []Module{
		mod("core"),
		mod("conformance", "core"),
		mod("kafka", "conformance", "core", "tools"),
		mod("pulsar", "conformance", "core", "tools"),
		mod("tools", "core", "kafka", "pulsar"),
		mod("otel", "core", "kafka", "pulsar", "tools"),
	}
	got := Cycles(mods)
	want := [][]string{{"kafka", "tools", "kafka"}, {"pulsar", "tools", "pulsar"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Cycles = %v, want %v", got, want)
	}
	err := Check(mods, nil)
	if !errors.Is(err, ErrCycle) {
		t.Fatalf("Check = %v, want ErrCycle", err)
	}
	if !strings.Contains(err.Error(), "kafka → tools → kafka") || !strings.Contains(err.Error(), "pulsar → tools → pulsar") {
		t.Fatalf("Check does not name both cycles: %v", err)
	}
}

func TestCyclesLongAndSelf(t *testing.T) {
	mods := []Module{mod("a", "b"), mod("b", "c"), mod("c", "a", "x"), mod("d", "d"), mod("e", "a")}
	got := Cycles(mods)
	want := [][]string{{"a", "b", "c", "a"}, {"d", "d"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Cycles = %v, want %v", got, want)
	}
}

func TestCheckAcyclic(t *testing.T) {
	mods := []Module{
		mod("core"),
		mod("brokertest"),
		mod("conformance", "core"),
		mod("kafka", "brokertest", "conformance", "core"),
		mod("pulsar", "brokertest", "conformance", "core"),
		mod("tools", "brokertest", "core", "kafka", "pulsar"),
	}
	if err := Check(mods, []string{"core", "brokertest"}); err != nil {
		t.Fatalf("acyclic graph rejected: %v", err)
	}
	if c := Cycles(mods); len(c) != 0 {
		t.Fatalf("Cycles = %v on an acyclic graph", c)
	}
}

func TestCheckReplaceAndLeaf(t *testing.T) {
	k := mod("kafka", "core")
	k.Replace = []string{versions.ModulePrefix + "core"}
	err := Check([]Module{mod("core"), k, mod("brokertest", "core")}, []string{"brokertest", "nope"})
	if !errors.Is(err, ErrReplace) {
		t.Errorf("replace directive not reported: %v", err)
	}
	if !errors.Is(err, ErrLeaf) || !strings.Contains(err.Error(), "brokertest requires core") {
		t.Errorf("leaf with a sibling not reported: %v", err)
	}
	if !strings.Contains(err.Error(), "nope is not in the version list") {
		t.Errorf("unknown leaf not reported: %v", err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "core", "go.mod"), "module "+versions.ModulePrefix+"core\n\ngo 1.25\n")
	writeFile(t, filepath.Join(root, "kafka", "go.mod"), "module "+versions.ModulePrefix+"kafka\n\ngo 1.25.0\n\nrequire (\n\t"+
		versions.ModulePrefix+"core v0.1.0\n\tgithub.com/x/y v1.0.0\n\t"+versions.ModulePrefix+"brokertest v0.1.0 // indirect\n)\n\nreplace "+
		versions.ModulePrefix+"core => ../core\n")
	mods, err := Load(root, versions.List{"core": "v0.1.0", "kafka": "v0.2.0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 2 || mods[1].Dir != "kafka" || mods[1].Version != "v0.2.0" || mods[1].Go != "1.25.0" {
		t.Fatalf("Load = %+v", mods)
	}
	if want := []string{"brokertest", "core"}; !reflect.DeepEqual(mods[1].Sibling, want) {
		t.Errorf("kafka siblings = %v, want %v", mods[1].Sibling, want)
	}
	if want := []string{versions.ModulePrefix + "core"}; !reflect.DeepEqual(mods[1].Replace, want) {
		t.Errorf("kafka replaces = %v, want %v", mods[1].Replace, want)
	}
	writeFile(t, filepath.Join(root, "pulsar", "go.mod"), "module example.com/pulsar\n")
	if _, err := Load(root, versions.List{"pulsar": "v0.1.0"}); err == nil {
		t.Error("a go.mod declaring another path was accepted")
	}
	if _, err := Load(root, versions.List{"missing": "v0.1.0"}); err == nil {
		t.Error("a missing go.mod was accepted")
	}
}

func TestCheckWork(t *testing.T) {
	mods := []Module{mod("core"), mod("kafka", "core")}
	cases := []struct {
		name, work string
		ok         bool
	}{
		{"agrees", "go 1.26\n\nuse (\n\t./core\n\t./kafka\n)\n\nreplace (\n\t" + versions.ModulePrefix + "core v0.1.0 => ./core\n\t" +
			versions.ModulePrefix + "kafka v0.1.0 => ./kafka\n)\n", true},
		{"stale version", "go 1.26\n\nuse (\n\t./core\n\t./kafka\n)\n\nreplace (\n\t" + versions.ModulePrefix + "core v0.0.9 => ./core\n\t" +
			versions.ModulePrefix + "kafka v0.1.0 => ./kafka\n)\n", false},
		{"unversioned", "go 1.26\n\nuse (\n\t./core\n\t./kafka\n)\n\nreplace (\n\t" + versions.ModulePrefix + "core => ./core\n\t" +
			versions.ModulePrefix + "kafka v0.1.0 => ./kafka\n)\n", false},
		{"not used", "go 1.26\n\nuse ./core\n\nreplace (\n\t" + versions.ModulePrefix + "core v0.1.0 => ./core\n\t" +
			versions.ModulePrefix + "kafka v0.1.0 => ./kafka\n)\n", false},
		{"unlisted sibling", "go 1.26\n\nuse (\n\t./core\n\t./kafka\n)\n\nreplace (\n\t" + versions.ModulePrefix + "core v0.1.0 => ./core\n\t" +
			versions.ModulePrefix + "kafka v0.1.0 => ./kafka\n\t" + versions.ModulePrefix + "old v0.1.0 => ./old\n)\n", false},
	}
	for _, c := range cases {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "go.work"), c.work)
		err := CheckWork(root, mods)
		if c.ok && err != nil {
			t.Errorf("%s: rejected: %v", c.name, err)
		}
		if !c.ok && !errors.Is(err, ErrWork) {
			t.Errorf("%s: accepted (%v)", c.name, err)
		}
	}
}

// TestRepositoryGraph is the repository's own rule: no cycle, no replace
// directive, core and brokertest stand alone, go.work agrees.
func TestRepositoryGraph(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	f, err := os.Open(filepath.Join(root, "versions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := versions.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := Load(root, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(Check(mods, []string{"core", "brokertest"}), CheckWork(root, mods)); err != nil {
		t.Fatalf("the repository's module graph:\n%s\n%v", Summary(mods), err)
	}
}
