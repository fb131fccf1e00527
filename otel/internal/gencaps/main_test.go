package main

import (
	"bytes"
	"os"
	"testing"
)

// The checked-in capabilities_gen.go must be what the generator writes
// today; run `go generate ./...` in the otel directory after a change.
func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../capabilities_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("capabilities_gen.go is stale: run go generate ./... in the otel directory")
	}
}

func TestEveryMaskIsGenerated(t *testing.T) {
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	n := 1 << len(capabilities)
	if c := bytes.Count(src, []byte("func(t *transport) babelqueue.Transport {")); c != n {
		t.Fatalf("%d constructors generated, want %d", c, n)
	}
}
