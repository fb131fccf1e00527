package schemacheck_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/conformance"
	"github.com/babelqueue/babelqueue-go/conformance/schemacheck"
)

func TestProducerFixturesValidate(t *testing.T) {
	s, err := conformance.DefaultSuite()
	if err != nil {
		t.Fatal(err)
	}
	res := schemacheck.Result(s)
	for _, f := range res.Failures {
		t.Errorf("%s: %s", f.Case, f.Message)
	}
	if res.Passed < 15 {
		t.Errorf("only %d producer fixtures checked", res.Passed)
	}
	// The suite's urn-alias fixtures are listed in the tolerance block, so
	// they are checked (must fail the schema) rather than left unchecked.
	if res.Skipped != 0 {
		t.Errorf("%d fixtures unchecked: %+v", res.Skipped, res.Cases)
	}
	n := 0
	for _, c := range res.Cases {
		if strings.HasPrefix(c.Name, conformance.ToleranceBlock+"/") && c.Status == conformance.StatusPassed {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d consumer-tolerance fixtures fail the producer schema, want 3", n)
	}
}

// schemaBlind lists invalid fixtures a JSON Schema cannot reject, and why.
var schemaBlind = map[string]string{
	// JSON Schema compares numbers by value and counts 1.0 as an integer,
	// so "schema_version": 1.0 satisfies "const": 1; consumers still reject
	// it because the gate compares the JSON text.
	"invalid-schema-version-float": "1.0 equals 1 in JSON Schema",
}

// TestSchemaRejectsInvalidFixtures keeps the schema honest: every fixture
// the suite marks invalid must fail it too.
func TestSchemaRejectsInvalidFixtures(t *testing.T) {
	s, err := conformance.DefaultSuite()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schemacheck.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name  string `json:"name"`
		File  string `json:"file"`
		Valid bool   `json:"valid"`
	}
	if err := json.Unmarshal(s.Manifest["cases"], &cases); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if c.Valid {
			continue
		}
		n++
		doc, err := s.ReadFile(c.File)
		if err != nil {
			t.Fatal(err)
		}
		if _, blind := schemaBlind[c.Name]; blind {
			if schemacheck.Validate(sch, doc) != nil {
				t.Errorf("%s: listed as schema-blind but the schema rejects it; drop it from schemaBlind", c.Name)
			}
			continue
		}
		if schemacheck.Validate(sch, doc) == nil {
			t.Errorf("%s: invalid fixture %s validates against the producer schema", c.Name, c.File)
		}
	}
	if n < 20 {
		t.Fatalf("only %d invalid fixtures", n)
	}
}

func TestBlankPatternFollowsTheBlankRule(t *testing.T) {
	s, err := conformance.DefaultSuite()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schemacheck.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.ReadFile("fixtures/order-created.json")
	if err != nil {
		t.Fatal(err)
	}
	for job, ok := range map[string]bool{"urn:x": true, "\u00a0": true, "\u3000": true, " \t\n\v\f\r": false, "": false} {
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		doc["job"] = job
		b, _ := json.Marshal(doc)
		if err := schemacheck.Validate(sch, b); (err == nil) != ok {
			t.Errorf("job %q: valid = %v, want %v (%v)", job, err == nil, ok, err)
		}
	}
}

func TestSuiteWithoutSchemaIsSkipped(t *testing.T) {
	s, err := conformance.Load(mapFS(map[string]string{"manifest.json": `{"cases": []}`}))
	if err != nil {
		t.Fatal(err)
	}
	res := schemacheck.Result(s)
	if res.Status() != conformance.StatusSkipped || !strings.Contains(res.Reason, "no schema") {
		t.Fatalf("result = %+v", res)
	}
}
