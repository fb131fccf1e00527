package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// blankOnly implements only BlankRule, with a configurable verdict.
type blankOnly struct{ fn func(string) bool }

func (blankOnly) Name() string            { return "blank-only" }
func (b blankOnly) IsBlank(s string) bool { return b.fn(s) }
func asciiBlank(s string) bool            { return strings.Trim(s, " \t\n\v\f\r") == "" }
func unicodeBlank(s string) bool          { return strings.TrimSpace(s) == "" }

func suiteOf(t *testing.T, manifest string, files map[string]string) *Suite {
	t.Helper()
	fsys := fstest.MapFS{ManifestFile: {Data: []byte(manifest)}}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	s, err := Load(fsys)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

const blankManifest = `{
  "schema_version": 1,
  "description": "test",
  "mystery": {"description": "x", "sub_a": {"cases": [1, 2, 3]}, "sub_b": {"k": 1}, "note": "scalar"},
  "babelqueue_go": {
    "blank": {"cases": [
      {"name": "space", "value": " ", "blank": true},
      {"name": "nbsp", "value": "\u00a0", "blank": false}
    ]}
  },
  "whole": {"cases": [{"name": "x"}]},
  "list_block": [1, 2]
}`

func TestLoadEnumeratesBlocksInManifestOrder(t *testing.T) {
	s := suiteOf(t, blankManifest, nil)
	var ids []string
	for _, b := range s.Blocks {
		ids = append(ids, b.ID)
	}
	want := []string{"mystery.sub_a", "mystery.sub_b", "babelqueue_go.blank", "whole", "list_block"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Fatalf("blocks (-want +got):\n%s", diff)
	}
	counts := map[string]int{}
	for _, b := range s.Blocks {
		counts[b.ID] = b.CaseCount()
	}
	if diff := cmp.Diff(map[string]int{"mystery.sub_a": 3, "mystery.sub_b": 1, "babelqueue_go.blank": 2, "whole": 1, "list_block": 2}, counts); diff != "" {
		t.Fatalf("case counts (-want +got):\n%s", diff)
	}
}

func TestUnknownBlocksAreSkippedNeverPassed(t *testing.T) {
	s := suiteOf(t, blankManifest, nil)
	rep := RunSuite(context.Background(), s, blankOnly{asciiBlank})
	for _, r := range rep.Results {
		if r.Block == "babelqueue_go.blank" {
			continue
		}
		if r.Status() != StatusSkipped || r.Passed != 0 || r.Reason != ReasonUnknownBlock {
			t.Errorf("%s: status %s passed %d reason %q, want skipped as unknown", r.Block, r.Status(), r.Passed, r.Reason)
		}
	}
	p, f, sk := rep.Totals()
	if p != 2 || f != 0 || sk != 3+1+1+2 {
		t.Fatalf("totals = %d passed, %d failed, %d skipped; want 2, 0, 7", p, f, sk)
	}
}

func TestWrongBehaviourFails(t *testing.T) {
	s := suiteOf(t, blankManifest, nil)
	rep := RunSuite(context.Background(), s, blankOnly{unicodeBlank})
	var blank Result
	for _, r := range rep.Results {
		if r.Block == "babelqueue_go.blank" {
			blank = r
		}
	}
	if blank.Status() != StatusFailed || blank.Failed != 1 || blank.Passed != 1 {
		t.Fatalf("blank block = %+v, want 1 passed and the nbsp case failed", blank)
	}
	if blank.Failures[0].Case != "nbsp" || !strings.Contains(blank.Failures[0].Message, `IsBlank("\u00a0") = true, want false`) {
		t.Fatalf("failure = %+v", blank.Failures[0])
	}
	if rep.OK() {
		t.Fatal("report with a failure is OK")
	}
}

func TestWrongExpectationInSuiteFails(t *testing.T) {
	manifest := strings.Replace(blankManifest, `"value": " ", "blank": true`, `"value": " ", "blank": false`, 1)
	rep := RunSuite(context.Background(), suiteOf(t, manifest, nil), blankOnly{asciiBlank})
	if _, failed, _ := rep.Totals(); failed != 1 {
		t.Fatalf("failed = %d, want 1", failed)
	}
}

type nameOnly struct{}

func (nameOnly) Name() string { return "bare" }

func TestUnimplementedCapabilityIsSkipped(t *testing.T) {
	rep := RunSuite(context.Background(), suiteOf(t, blankManifest, nil), nameOnly{})
	for _, r := range rep.Results {
		if r.Block == "babelqueue_go.blank" && (r.Status() != StatusSkipped || r.Skipped != 2 || r.Reason != "no BlankRule" || r.Capability != "BlankRule") {
			t.Fatalf("blank for a binding without BlankRule = %+v", r)
		}
	}
	if !rep.OK() {
		t.Fatal("skips must not fail the report")
	}
}

// explaining gives its own skip reason for one block only.
type explaining struct{ nameOnly }

func (explaining) NotImplemented(block string) string {
	if block == "babelqueue_go.blank" {
		return "blank is core's"
	}
	return ""
}

// blankExplaining implements BlankRule and still explains: the
// explanation must not stop the block from running.
type blankExplaining struct {
	blankOnly
	explaining
}

func (b blankExplaining) Name() string { return b.blankOnly.Name() }

func TestExplainerGivesTheSkipReasonButNeverAPass(t *testing.T) {
	rep := RunSuite(context.Background(), suiteOf(t, blankManifest, nil), explaining{})
	for _, r := range rep.Results {
		switch {
		case r.Block == "babelqueue_go.blank":
			if r.Status() != StatusSkipped || r.Reason != "blank is core's" || r.Capability != "BlankRule" {
				t.Errorf("blank = %+v, want skipped with the binding's reason", r)
			}
		case r.Reason != ReasonUnknownBlock:
			t.Errorf("%s: reason %q, want %q (an explainer does not explain unknown blocks)", r.Block, r.Reason, ReasonUnknownBlock)
		}
	}
	rep = RunSuite(context.Background(), suiteOf(t, blankManifest, nil), blankExplaining{blankOnly{unicodeBlank}, explaining{}})
	for _, r := range rep.Results {
		if r.Block == "babelqueue_go.blank" && (r.Status() != StatusFailed || r.Failed != 1) {
			t.Errorf("blank of an explaining binding that implements it = %+v, want it run (and its nbsp case failed)", r)
		}
	}
}

func TestBindingPanicFailsTheCase(t *testing.T) {
	rep := RunSuite(context.Background(), suiteOf(t, blankManifest, nil), blankOnly{func(string) bool { panic("boom") }})
	for _, r := range rep.Results {
		if r.Block == "babelqueue_go.blank" && (r.Failed != 2 || !strings.Contains(r.Failures[0].Message, "panicked: boom")) {
			t.Fatalf("blank = %+v, want both cases failed with the panic", r)
		}
	}
}

func TestMalformedKnownBlockFails(t *testing.T) {
	manifest := `{"babelqueue_go": {"blank": {"cases": {"not": "a list"}}}}`
	rep := RunSuite(context.Background(), suiteOf(t, manifest, nil), blankOnly{asciiBlank})
	if len(rep.Results) != 1 || rep.Results[0].Status() != StatusFailed {
		t.Fatalf("results = %+v, want one failed block", rep.Results)
	}
}

func TestEmptyKnownBlockFails(t *testing.T) {
	manifest := `{"babelqueue_go": {"blank": {"cases": []}}}`
	rep := RunSuite(context.Background(), suiteOf(t, manifest, nil), blankOnly{asciiBlank})
	if rep.OK() {
		t.Fatal("a known block with no cases must not pass silently")
	}
}

func TestPayloadForms(t *testing.T) {
	s := suiteOf(t, `{}`, map[string]string{"fixtures/a.json": "{\"a\":1}"})
	str := func(v string) *string { return &v }
	for _, tc := range []struct {
		p    Payload
		want string
	}{
		{Payload{File: str("fixtures/a.json")}, `{"a":1}`},
		{Payload{Text: str("caf\u00e9")}, "caf\u00e9"},
		{Payload{Base64: str("/w==")}, "\xff"},
		{Payload{Text: str("")}, ""},
	} {
		got, err := tc.p.Bytes(s)
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v: got %q, %v; want %q", tc.p, got, err, tc.want)
		}
	}
	if _, err := (Payload{}).Bytes(s); err == nil {
		t.Error("empty payload accepted")
	}
	if _, err := (Payload{Text: str("x"), Base64: str("eA==")}).Bytes(s); err == nil {
		t.Error("payload with two forms accepted")
	}
}

func TestJSONEqualIsExactOnNumbers(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`12345678901234567890`, `12345678901234567890`, true},
		{`12345678901234567890`, `12345678901234567891`, false},
		{`1.0`, `1`, true},
		{`{"a":[1,{"b":null}]}`, `{"a":[1,{"b":null}]}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{}`, `[]`, false},
		{`"1"`, `1`, false},
	} {
		got, err := sameJSON([]byte(tc.a), []byte(tc.b))
		if err != nil || got != tc.want {
			t.Errorf("sameJSON(%s, %s) = %v, %v; want %v", tc.a, tc.b, got, err, tc.want)
		}
	}
}

func TestReportWrite(t *testing.T) {
	rep := &Report{Results: []Result{
		{Block: "cases", Binding: "core", Passed: 2},
		{Block: "kafka.x", Binding: "core", Skipped: 3, Reason: ReasonUnknownBlock},
		{Block: "babelqueue_go.blank", Binding: "core", Passed: 1, Failed: 1, Failures: []Failure{{Case: "nbsp", Message: "wrong"}}},
	}}
	var buf bytes.Buffer
	if err := rep.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := `block               | core
--------------------+-------------------
cases               | PASS 2/2
kafka.x             | SKIP unknown block
babelqueue_go.blank | FAIL 1/2
failed cases:
  core  babelqueue_go.blank/nbsp: wrong
3 passed, 1 failed, 3 skipped
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Fatalf("output (-want +got):\n%s", diff)
	}
}

func TestDefaultSuiteMatchesDirectory(t *testing.T) {
	embedded, err := DefaultSuite()
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := LoadDir("suite")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(embedded.Manifest)
	b, _ := json.Marshal(onDisk.Manifest)
	if !bytes.Equal(a, b) {
		t.Fatal("embedded suite differs from suite/")
	}
	entries, err := os.ReadDir(filepath.Join("suite", "fixtures"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
}

// settleSkipper reports every gate settlement case as one it cannot run.
type settleSkipper struct{}

func (settleSkipper) Name() string { return "skipper" }
func (settleSkipper) SettleVersionGated(context.Context, GatedDelivery) (GatedOutcome, error) {
	return GatedOutcome{}, fmt.Errorf("wrapped: %w", Skip("cannot redeliver"))
}

func TestBindingSkipIsReportedSkipped(t *testing.T) {
	manifest := `{"babelqueue_go": {"version_gate_settlement": {"cases": [{"name": "a", "queue": "q", "body": {"text": "{}"}, "expected": {}}]}}}`
	rep := RunSuite(context.Background(), suiteOf(t, manifest, nil), settleSkipper{})
	r := rep.Results[0]
	if r.Status() != StatusSkipped || r.Skipped != 1 || r.Cases[0].Message != "cannot redeliver" {
		t.Fatalf("result = %+v, want the case skipped with the binding's reason", r)
	}
}
