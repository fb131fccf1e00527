package gdpr_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/gdpr"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// FuzzFieldPath parses arbitrary paths and protects a fixed object with
// them: the path keeps its text, Protect never fails on a valid object,
// and Unprotect restores it byte for byte.
func FuzzFieldPath(f *testing.F) {
	for _, s := range []string{"", "email", "profile.full_name", "addresses[].line", "[]", "a[][]", "a..b", ".", "a[].b[].c", "x[", "k\u00e9y"} {
		f.Add(s)
	}
	doc := []byte(`{"email":"e","profile":{"full_name":"n","x":1},"addresses":[{"line":"l"},{"line":[1,2]},3],"":{"":"root-ish"},"a":[[1],{"b":[{"c":true}]}],"k\u00e9y":null}`)
	c, err := gdpr.NewAESGCM(bytes.Repeat([]byte{3}, 16))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string) {
		fp := wire.ParseFieldPath(path)
		if fp.String() != path {
			t.Fatalf("String() = %q, want %q", fp.String(), path)
		}
		if fp.IsRoot() != (path == "") {
			t.Fatalf("IsRoot(%q) = %v", path, fp.IsRoot())
		}
		keys, _ := fp.Segments()
		if path != "" && len(keys) != strings.Count(path, ".")+1 {
			t.Fatalf("%q has %d segments", path, len(keys))
		}
		paths := gdpr.NewPaths(path)
		prot, err := gdpr.Protect(doc, paths, c)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(prot) {
			t.Fatalf("invalid JSON %s", prot)
		}
		back, err := gdpr.Unprotect(prot, paths, c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, doc) {
			t.Fatalf("path %q: round trip\n got %s\nwant %s", path, back, doc)
		}
	})
}

// FuzzUnprotect runs Unprotect on arbitrary bodies: it never panics, a
// failure is either ErrDecrypt or not-an-object, a success is a JSON
// object, and a body without strings at the paths comes back unchanged.
func FuzzUnprotect(f *testing.F) {
	c, err := gdpr.NewAESGCM(bytes.Repeat([]byte{4}, 32))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := gdpr.Protect([]byte(`{"email":"a@b","n":[{"s":"x"}]}`), gdpr.NewPaths("email", "n[].s"), c)
	for _, s := range []string{`{}`, `{"email":1}`, `{"email":"AAAA"}`, `{"email":"not base64!"}`, string(good), `[]`, `{"email":`, `{"n":[{"s":null},{"s":"\u0041"}]}`, "{\"email\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	paths := gdpr.NewPaths("email", "n[].s")
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := gdpr.Unprotect(body, paths, c)
		if err != nil {
			if !errors.Is(err, gdpr.ErrDecrypt) && !errors.Is(err, wire.ErrInvalidData) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !wire.ValidJSONValue(out) || bytes.TrimSpace(out)[0] != '{' {
			t.Fatalf("Unprotect returned %q", out)
		}
		again, err := gdpr.Unprotect(out, gdpr.NewPaths(), c)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("no paths must change nothing: %v", err)
		}
	})
}
