package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/conformance"
)

var totalsLine = regexp.MustCompile(`^(\d+) passed, (\d+) failed, (\d+) skipped$`)

func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestDefaultSuitePasses(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	m := totalsLine.FindStringSubmatch(lastLine(out.String()))
	if m == nil || m[2] != "0" || m[1] == "0" {
		t.Fatalf("last line %q", lastLine(out.String()))
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^block +\| core$`),
		regexp.MustCompile(`(?m)^cases +\| PASS (\d+)/(\d+)$`),
		regexp.MustCompile(`(?m)^babelqueue_go\.kafka_retry_tier +\| SKIP Kafka transport code: see kafka$`),
		regexp.MustCompile(`(?m)^suite check schema/message-envelope\.schema\.json \(jsonschema\): PASS \d+/\d+$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
}

// copySuite writes the embedded suite into a temporary directory.
func copySuite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(conformance.DefaultSuiteFS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, path)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(conformance.DefaultSuiteFS(), path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestExternalSuiteWithUnknownBlockAndModifiedCase(t *testing.T) {
	dir := copySuite(t)
	manifest := filepath.Join(dir, "manifest.json")
	raw, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	// An unknown block, as another version of the canonical suite has.
	text = strings.Replace(text, `"kafka": {`, `"sqs": {"attribute_projection": {"envelope_file": "fixtures/order-created.json", "message_attributes": {}}, "attempts_reconciliation": {"cases": [{"name": "a"}, {"name": "b"}]}},
  "kafka": {`, 1)
	// A modified case: the header is authoritative, so 3 is wrong.
	const orig = `"name": "header-below-body-wins",
          "body_attempts": 5,
          "header_attempts": 1,
          "expected_attempts": 1`
	if !strings.Contains(text, orig) {
		t.Fatal("case to modify not found")
	}
	text = strings.Replace(text, orig, strings.Replace(orig, `"expected_attempts": 1`, `"expected_attempts": 3`, 1), 1)
	if err := os.WriteFile(manifest, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"-suite", dir}, &out, &errOut); code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^sqs\.attribute_projection +\| SKIP unknown block$`),
		regexp.MustCompile(`(?m)^sqs\.attempts_reconciliation +\| SKIP unknown block$`),
		regexp.MustCompile(`(?m)^kafka\.attempts_reconciliation +\| FAIL 5/6$`),
		regexp.MustCompile(`(?m)^  core  kafka\.attempts_reconciliation/header-below-body-wins: body 5, header "1": attempts = 1, want 3$`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	m := totalsLine.FindStringSubmatch(lastLine(got))
	if m == nil || m[2] != "1" {
		t.Fatalf("last line %q, want 1 failed", lastLine(got))
	}
}

func TestMissingSuiteDirectory(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-suite", filepath.Join(t.TempDir(), "nope")}, &out, &errOut); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "manifest.json") {
		t.Fatalf("stderr %q does not name the manifest", errOut.String())
	}
}
