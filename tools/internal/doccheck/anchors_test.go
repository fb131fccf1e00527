package doccheck

import (
	"errors"
	"strings"
	"testing"
)

func TestAnchorsReportsEveryStaleReference(t *testing.T) {
	n, err := Anchors("testdata/anchors")
	if !errors.Is(err, ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`mod/DESIGN.md:5 links #missing-heading`,
		`mod/sub/code.go:6 names mod/DESIGN.md, "Waves"`,
		`mod/sub/code.go:8 refers to a numbered section of DESIGN.md`,
		`mod/sub/code.go:12 names other/DESIGN.md, which does not exist`,
		`README.md:1 links mod/DESIGN.md#gone`,
		`mod/sub/code.go:15 names DESIGN.md, "Gone too"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if got := strings.Count(msg, "\n") + 1; got != 6 {
		t.Errorf("%d findings, want 6:\n%s", got, msg)
	}
	if n != 12 {
		t.Errorf("checked %d references, want 12", n)
	}
}

func TestFirstSentencesReportsLongOpenings(t *testing.T) {
	found, st, err := FirstSentences("testdata/comments", []string{"pkg"}, MaxFirstSentence)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range found {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, ","), "Long,T.Method,A,Chain"; got != want {
		t.Errorf("findings %s, want %s", got, want)
	}
	if st.Documented != 7 {
		t.Errorf("documented %d, want 7", st.Documented)
	}
}
