package schemacheck_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/schemacheck"
)

// producerSchema requires a non-empty job, as the producer schema does.
const producerSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["job"],
  "properties": {"job": {"type": "string", "pattern": "[^ \\t\\n\\v\\f\\r]"}, "urn": {"type": "string"}}
}`

func caseStatuses(res conformance.Result) map[string]conformance.Status {
	got := map[string]conformance.Status{}
	for _, c := range res.Cases {
		got[c.Name] = c.Status
	}
	return got
}

// TestURNAliasWithoutJobIsNotCheckedAgainstTheProducerSchema writes a
// suite in the canonical format, with no manifest field beyond it: a valid
// fixture that carries urn and no job (or a blank job) is a consumer
// tolerance and is reported unchecked, never failed or passed; every other
// valid fixture, urn or not, is still validated.
func TestURNAliasWithoutJobIsNotCheckedAgainstTheProducerSchema(t *testing.T) {
	s, err := conformance.Load(mapFS(map[string]string{
		"manifest.json": `{
  "schema_version": 1,
  "cases": [
    {"name": "alias", "file": "fixtures/alias.json", "valid": true, "expect": {"urn": "urn:x"}},
    {"name": "blank-job-alias", "file": "fixtures/blank-job-alias.json", "valid": true, "expect": {"urn": "urn:x"}},
    {"name": "job-and-urn", "file": "fixtures/job-and-urn.json", "valid": true, "expect": {"urn": "urn:x"}},
    {"name": "numeric-job-alias", "file": "fixtures/numeric-job-alias.json", "valid": true, "expect": {"urn": "urn:x"}},
    {"name": "neither", "file": "fixtures/neither.json", "valid": true, "expect": {"urn": "urn:x"}},
    {"name": "rejected-alias", "file": "fixtures/rejected-alias.json", "valid": false, "reason": "r"}
  ],
  "roundtrip": {"cases": [
    {"name": "alias-again", "file": "fixtures/alias.json"},
    {"name": "alias-roundtrip", "file": "fixtures/alias-roundtrip.json"}
  ]}
}`,
		schemacheck.SchemaFile:            producerSchema,
		"fixtures/alias.json":             `{"urn": "urn:x"}`,
		"fixtures/blank-job-alias.json":   `{"job": " \t", "urn": "urn:x"}`,
		"fixtures/job-and-urn.json":       `{"job": "urn:x", "urn": "urn:x"}`,
		"fixtures/numeric-job-alias.json": `{"job": 7, "urn": "urn:x"}`,
		"fixtures/neither.json":           `{"trace_id": "t"}`,
		"fixtures/rejected-alias.json":    `{"urn": ""}`,
		"fixtures/alias-roundtrip.json":   `{"urn": "urn:x", "attempts": 0}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	res := schemacheck.Result(s)
	skip, pass, fail := conformance.StatusSkipped, conformance.StatusPassed, conformance.StatusFailed
	want := map[string]conformance.Status{
		"alias":             skip,
		"blank-job-alias":   skip,
		"job-and-urn":       pass,
		"numeric-job-alias": fail, // a job is present: the fixture is checked, and 7 is not a string
		"neither":           fail, // no urn: nothing exempts it
		"alias-roundtrip":   skip, // the rule holds for roundtrip files too
	}
	if diff := cmp.Diff(want, caseStatuses(res)); diff != "" {
		t.Fatalf("fixture statuses (-want +got):\n%s", diff)
	}
	if res.Passed != 1 || res.Failed != 2 || res.Skipped != 3 {
		t.Fatalf("counts %d/%d/%d, want 1 passed, 2 failed, 3 skipped", res.Passed, res.Failed, res.Skipped)
	}
	for _, c := range res.Cases {
		if c.Status == skip && c.Message != schemacheck.ReasonURNAlias {
			t.Errorf("%s skipped for %q", c.Name, c.Message)
		}
	}
}

// TestToleranceBlockFixturesMustFailTheSchema covers this project's block:
// a listed file is checked (even an urn alias) and must not validate.
func TestToleranceBlockFixturesMustFailTheSchema(t *testing.T) {
	s, err := conformance.Load(mapFS(map[string]string{
		"manifest.json": `{
  "cases": [
    {"name": "alias", "file": "fixtures/alias.json", "valid": true},
    {"name": "odd-lang", "file": "fixtures/odd-lang.json", "valid": true}
  ],
  "babelqueue_go": {"consumer_tolerance": {"cases": [
    {"name": "alias", "file": "fixtures/alias.json"},
    {"name": "odd-lang", "file": "fixtures/odd-lang.json"}
  ]}}
}`,
		schemacheck.SchemaFile:   producerSchema,
		"fixtures/alias.json":    `{"urn": "urn:x"}`,
		"fixtures/odd-lang.json": `{"job": "urn:x", "meta": {"lang": "cobol"}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	res := schemacheck.Result(s)
	want := map[string]conformance.Status{
		conformance.ToleranceBlock + "/alias":    conformance.StatusPassed,
		conformance.ToleranceBlock + "/odd-lang": conformance.StatusFailed, // this schema does not restrict lang
	}
	if diff := cmp.Diff(want, caseStatuses(res)); diff != "" {
		t.Fatalf("fixture statuses (-want +got):\n%s", diff)
	}
}
