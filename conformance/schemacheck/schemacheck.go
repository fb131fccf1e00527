// Package schemacheck validates the producer fixtures of a conformance suite
// against the suite's draft-07 envelope schema
// (schema/message-envelope.schema.json).
//
// Producer fixtures are the files of the valid "cases" entries and of the
// "roundtrip" cases; an entry marked "producer_schema_valid": false is a
// consumer-tolerance fixture (such as the urn alias) and must NOT validate.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/babelqueue/babelqueue-go/conformance"
)

// SchemaFile is the schema's path inside a suite.
const SchemaFile = "schema/message-envelope.schema.json"

// schemaURL is where the compiler files the schema; the suite's own $id,
// whatever it says, is never fetched.
const schemaURL = "mem://suite/" + SchemaFile

// ErrNoSchema reports a suite without SchemaFile.
var ErrNoSchema = errors.New("schemacheck: suite has no " + SchemaFile)

// Fixture is one producer fixture and whether it must validate.
type Fixture struct {
	Case string
	File string
	// Valid is false for a consumer-tolerance fixture, which must fail.
	Valid bool
}

// Fixtures lists the producer fixtures of s, each file once.
func Fixtures(s *conformance.Suite) ([]Fixture, error) {
	var out []Fixture
	seen := map[string]bool{}
	add := func(name, file string, valid *bool) {
		if file == "" || seen[file] {
			return
		}
		seen[file] = true
		out = append(out, Fixture{Case: name, File: file, Valid: valid == nil || *valid})
	}
	type entry struct {
		Name                string `json:"name"`
		File                string `json:"file"`
		Valid               *bool  `json:"valid"`
		ProducerSchemaValid *bool  `json:"producer_schema_valid"`
	}
	if raw, ok := s.Manifest["cases"]; ok {
		var cases []entry
		if err := json.Unmarshal(raw, &cases); err != nil {
			return nil, fmt.Errorf("schemacheck: cases: %w", err)
		}
		for _, c := range cases {
			if c.Valid != nil && *c.Valid {
				add(c.Name, c.File, c.ProducerSchemaValid)
			}
		}
	}
	if raw, ok := s.Manifest["roundtrip"]; ok {
		var rt struct {
			Cases []entry `json:"cases"`
		}
		if err := json.Unmarshal(raw, &rt); err != nil {
			return nil, fmt.Errorf("schemacheck: roundtrip: %w", err)
		}
		for _, c := range rt.Cases {
			add(c.Name, c.File, c.ProducerSchemaValid)
		}
	}
	return out, nil
}

// Compile compiles the suite's envelope schema as draft-07.
func Compile(s *conformance.Suite) (*jsonschema.Schema, error) {
	raw, err := s.ReadFile(SchemaFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSchema, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schemacheck: %s: %w", SchemaFile, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("schemacheck: %s: %w", SchemaFile, err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("schemacheck: %s: %w", SchemaFile, err)
	}
	return sch, nil
}

// Validate validates one document against sch.
func Validate(sch *jsonschema.Schema, doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return sch.Validate(v)
}

// Result checks every producer fixture of s and reports it as the block
// "schema/message-envelope.schema.json" of the binding "jsonschema": a
// fixture passes when its validity matches Fixture.Valid. A suite without a
// schema is reported skipped.
func Result(s *conformance.Suite) conformance.Result {
	res := conformance.Result{Block: SchemaFile, Binding: "jsonschema"}
	sch, err := Compile(s)
	if errors.Is(err, ErrNoSchema) {
		res.Skipped, res.Reason = 1, "suite has no schema"
		return res
	}
	if err != nil {
		res.Failed = 1
		res.Failures = []conformance.Failure{{Case: "(schema)", Message: err.Error()}}
		return res
	}
	fixtures, err := Fixtures(s)
	if err != nil {
		res.Failed = 1
		res.Failures = []conformance.Failure{{Case: "(manifest)", Message: err.Error()}}
		return res
	}
	for _, f := range fixtures {
		cr := conformance.CaseResult{Name: f.Case, Status: conformance.StatusPassed}
		doc, err := s.ReadFile(f.File)
		if err == nil {
			verr := Validate(sch, doc)
			switch {
			case f.Valid && verr != nil:
				err = fmt.Errorf("%s does not validate: %v", f.File, verr)
			case !f.Valid && verr == nil:
				err = fmt.Errorf("%s is marked producer_schema_valid: false but validates", f.File)
			}
		}
		if err != nil {
			cr.Status, cr.Message = conformance.StatusFailed, err.Error()
			res.Failed++
			res.Failures = append(res.Failures, conformance.Failure{Case: f.Case, Message: err.Error()})
		} else {
			res.Passed++
		}
		res.Cases = append(res.Cases, cr)
	}
	return res
}
