package readme

import (
	"errors"
	"strings"
	"testing"
)

// The references the check refuses are spelled in pieces here, so that this
// file does not hold them.
const (
	sec  = "\u00a7"
	spec = "SP" + "EC "
	adr  = "A" + "DR-"
)

func TestCheckCitations(t *testing.T) {
	root := t.TempDir()
	write(t, root, "CONTRACT.md", "# Rules\n\n## 2. Envelope\n\n- **2.4 Minimal mutation.** x\n\n## 6. Kafka\n\n- **6.5 Tier choice**: y\n")
	write(t, root, "a/a.go", "package a\n\n// Edit (CONTRACT.md 2.4) and tiers (CONTRACT.md 6.5), classes (CONTRACT.md 2.4–6.5).\n// base64 (RFC 4648 "+sec+"4, padded)\n")
	if n, err := CheckCitations(root); n != 4 || err != nil {
		t.Fatalf("good citations: %d %v", n, err)
	}
	write(t, root, "b/README.md", "tiers (CONTRACT.md 6.4), envelope ("+spec+"2.4), bindings "+sec+"6, dedupe ("+adr+"0022)\n")
	write(t, root, ".git/x.md", spec+"9 (ignored)\n")
	_, err := CheckCitations(root)
	if !errors.Is(err, ErrStale) {
		t.Fatalf("bad citations: %v", err)
	}
	for _, s := range []string{"b/README.md:1 cites CONTRACT.md 6.4, which CONTRACT.md does not define", "b/README.md:1 cites a document the repository does not hold"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
	if strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("want two errors:\n%v", err)
	}
}

func TestUnfollowable(t *testing.T) {
	for _, s := range []string{"(" + sec + "6.4)", "the " + sec + "5 rule", spec + "2.4", spec + sec + "7", adr + "0024", "bindings " + sec + "6"} {
		if !unfollowable.MatchString(s) {
			t.Errorf("%q not flagged", s)
		}
	}
	for _, s := range []string{"CONTRACT.md 6.4", "RFC 4648 " + sec + "4"} {
		if unfollowable.MatchString(publicSection.ReplaceAllString(s, "")) {
			t.Errorf("%q flagged", s)
		}
	}
}
