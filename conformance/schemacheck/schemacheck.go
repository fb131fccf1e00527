// Package schemacheck validates the producer fixtures of a conformance suite
// against the suite's draft-07 envelope schema
// (schema/message-envelope.schema.json).
//
// Producer fixtures are the files of the valid "cases" entries and of the
// "roundtrip" cases; each must validate. Two kinds of fixture are consumer
// tolerances rather than producer output: one that carries the urn alias
// and no job is not checked (any suite, the canonical one included), and
// one listed in this project's babelqueue_go.consumer_tolerance block must
// fail the schema.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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

// Fixture is one fixture the schema check looks at.
type Fixture struct {
	Case string
	File string
	// Valid is false for a fixture of conformance.ToleranceBlock, which
	// must fail the schema.
	Valid bool
	// Unchecked, when not "", says why the fixture is not validated at all
	// (ReasonURNAlias).
	Unchecked string
}

// ReasonURNAlias is why a fixture that carries the urn alias and no job is
// not validated: it is a consumer tolerance, not producer output, so the
// producer schema (which requires job) does not apply to it.
const ReasonURNAlias = "consumer tolerance (urn alias, no job): not checked against the producer schema"

// Fixtures lists the fixtures of s the schema check looks at, each file
// once: first the files of conformance.ToleranceBlock (must fail the
// schema), then the producer fixtures, the files of the valid "cases"
// entries and of the "roundtrip" cases (must validate). A producer fixture
// whose top-level object carries "urn" and no job (no "job" key, or a blank
// one, which consumers treat as absent) is marked Unchecked. Nothing else
// in the manifest decides what is checked.
func Fixtures(s *conformance.Suite) ([]Fixture, error) {
	var out []Fixture
	seen := map[string]bool{}
	add := func(name, file string, valid bool) {
		if file == "" || seen[file] {
			return
		}
		seen[file] = true
		f := Fixture{Case: name, File: file, Valid: valid}
		if valid {
			if doc, err := s.ReadFile(file); err == nil && urnAliasWithoutJob(doc) {
				f.Unchecked = ReasonURNAlias
			}
		}
		out = append(out, f)
	}
	type entry struct {
		Name  string `json:"name"`
		File  string `json:"file"`
		Valid *bool  `json:"valid"`
	}
	var tolerance struct {
		Cases []entry `json:"cases"`
	}
	if raw, ok := block(s, conformance.ToleranceBlock); ok {
		if err := json.Unmarshal(raw, &tolerance); err != nil {
			return nil, fmt.Errorf("schemacheck: %s: %w", conformance.ToleranceBlock, err)
		}
	}
	for _, c := range tolerance.Cases {
		add(conformance.ToleranceBlock+"/"+c.Name, c.File, false)
	}
	if raw, ok := s.Manifest["cases"]; ok {
		var cases []entry
		if err := json.Unmarshal(raw, &cases); err != nil {
			return nil, fmt.Errorf("schemacheck: cases: %w", err)
		}
		for _, c := range cases {
			if c.Valid != nil && *c.Valid {
				add(c.Name, c.File, true)
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
			add(c.Name, c.File, true)
		}
	}
	return out, nil
}

// block returns the raw JSON of the block with the given id.
func block(s *conformance.Suite, id string) (json.RawMessage, bool) {
	for _, b := range s.Blocks {
		if b.ID == id {
			return b.Raw, true
		}
	}
	return nil, false
}

// urnAliasWithoutJob reports whether doc is a JSON object with a "urn" key
// and no job: no "job" key, or a job string that is blank (empty or only
// ASCII whitespace, CONTRACT.md 2.5).
func urnAliasWithoutJob(doc []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return false
	}
	if _, ok := top["urn"]; !ok {
		return false
	}
	raw, ok := top["job"]
	if !ok {
		return true
	}
	var job string
	return json.Unmarshal(raw, &job) == nil && strings.Trim(job, " \t\n\v\f\r") == ""
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

// Result checks the fixtures of s (Fixtures) and reports them as the block
// "schema/message-envelope.schema.json" of the binding "jsonschema": a
// fixture passes when its validity matches Fixture.Valid, and an Unchecked
// fixture is a skipped case. A suite without a schema is reported skipped.
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
		if f.Unchecked != "" {
			res.Skipped++
			if res.Reason == "" {
				res.Reason = "some fixtures not checked: " + f.Unchecked
			}
			res.Cases = append(res.Cases, conformance.CaseResult{Name: f.Case, Status: conformance.StatusSkipped, Message: f.Unchecked})
			continue
		}
		cr := conformance.CaseResult{Name: f.Case, Status: conformance.StatusPassed}
		doc, err := s.ReadFile(f.File)
		if err == nil {
			verr := Validate(sch, doc)
			switch {
			case f.Valid && verr != nil:
				err = fmt.Errorf("%s does not validate: %v", f.File, verr)
			case !f.Valid && verr == nil:
				err = fmt.Errorf("%s is listed in %s but validates against the producer schema", f.File, conformance.ToleranceBlock)
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
