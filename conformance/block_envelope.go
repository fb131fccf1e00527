package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

func init() {
	register("cases", "EnvelopeDecoder", runEnvelopeCases)
	register("data_shape", "EnvelopeProducer or EnvelopeDecoder", runDataShape)
	register("roundtrip", "RoundTripper", runRoundTrip)
	register(ToleranceBlock, "EnvelopeDecoder", runConsumerTolerance)
}

// ToleranceBlock is the block of this project's suite that lists fixtures a
// consumer accepts although they are not producer output: the binding's
// decoder must accept each file, and the producer schema check
// (package schemacheck) requires each to fail the schema.
const ToleranceBlock = "babelqueue_go.consumer_tolerance"

type toleranceCase struct {
	Name string `json:"name"`
	File string `json:"file"`
}

func runConsumerTolerance(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c toleranceCase) string { return c.Name }, func(dec EnvelopeDecoder, c toleranceCase) error {
		body, err := s.ReadFile(c.File)
		if err != nil {
			return err
		}
		if _, err := dec.DecodeEnvelope(body); err != nil {
			return fmt.Errorf("%s rejected: %v", c.File, err)
		}
		return nil
	})
}

// envelopeCase is one entry of the top-level "cases" array.
type envelopeCase struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Valid  *bool  `json:"valid"`
	Reason string `json:"reason"`
	Expect *struct {
		URN           *string         `json:"urn"`
		Data          json.RawMessage `json:"data"`
		Attempts      *int            `json:"attempts"`
		Lang          *string         `json:"lang"`
		SchemaVersion *int            `json:"schema_version"`
		DeadLetter    *struct {
			Reason        *string `json:"reason"`
			OriginalQueue *string `json:"original_queue"`
		} `json:"dead_letter"`
	} `json:"expect"`
}

func runEnvelopeCases(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	var list []envelopeCase
	if err := decodeBlock(raw, &list); err != nil {
		return nil, false, err
	}
	dec, ok := b.(EnvelopeDecoder)
	if !ok {
		return nil, false, nil
	}
	var out []namedCase
	for i, c := range list {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error { return checkEnvelopeCase(s, dec, c) }})
	}
	return out, true, nil
}

func checkEnvelopeCase(s *Suite, dec EnvelopeDecoder, c envelopeCase) error {
	if c.Valid == nil {
		return fmt.Errorf("%w: case has no \"valid\"", ErrSuite)
	}
	body, err := s.ReadFile(c.File)
	if err != nil {
		return err
	}
	env, derr := dec.DecodeEnvelope(body)
	if !*c.Valid {
		if derr == nil {
			return fmt.Errorf("accepted an invalid envelope (%s)", c.Reason)
		}
		return nil
	}
	if derr != nil {
		return fmt.Errorf("rejected a valid envelope: %v", derr)
	}
	if c.Expect == nil {
		return fmt.Errorf("%w: valid case has no \"expect\"", ErrSuite)
	}
	e := c.Expect
	var errs []string
	if e.URN != nil && env.URN != *e.URN {
		errs = append(errs, fmt.Sprintf("urn = %q, want %q", env.URN, *e.URN))
	}
	if e.Attempts != nil && env.Attempts != *e.Attempts {
		errs = append(errs, fmt.Sprintf("attempts = %d, want %d", env.Attempts, *e.Attempts))
	}
	if e.Lang != nil && env.Lang != *e.Lang {
		errs = append(errs, fmt.Sprintf("lang = %q, want %q", env.Lang, *e.Lang))
	}
	if e.SchemaVersion != nil && env.SchemaVersion != *e.SchemaVersion {
		errs = append(errs, fmt.Sprintf("schema_version = %d, want %d", env.SchemaVersion, *e.SchemaVersion))
	}
	if len(e.Data) > 0 {
		same, err := sameJSON(env.Data, e.Data)
		if err != nil {
			return err
		}
		if !same {
			errs = append(errs, fmt.Sprintf("data = %s, want %s", env.Data, e.Data))
		}
	}
	if env.TraceID == "" || env.MetaID == "" || env.CreatedAt == 0 {
		errs = append(errs, "per-message fields trace_id, meta.id, meta.created_at must be present")
	}
	if dl := e.DeadLetter; dl != nil {
		switch {
		case env.DeadLetter == nil:
			errs = append(errs, "no dead_letter block decoded")
		default:
			if dl.Reason != nil && env.DeadLetter.Reason != *dl.Reason {
				errs = append(errs, fmt.Sprintf("dead_letter.reason = %q, want %q", env.DeadLetter.Reason, *dl.Reason))
			}
			if dl.OriginalQueue != nil && env.DeadLetter.OriginalQueue != *dl.OriginalQueue {
				errs = append(errs, fmt.Sprintf("dead_letter.original_queue = %q, want %q", env.DeadLetter.OriginalQueue, *dl.OriginalQueue))
			}
		}
	}
	return joinErrs(errs)
}

func joinErrs(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	msg := errs[0]
	for _, e := range errs[1:] {
		msg += "; " + e
	}
	return fmt.Errorf("%s", msg)
}

// dataShapeBlock is the canonical "data_shape" block.
type dataShapeBlock struct {
	Cases []struct {
		Name                  string          `json:"name"`
		Mode                  string          `json:"mode"`
		URN                   string          `json:"urn"`
		Queue                 string          `json:"queue"`
		Data                  json.RawMessage `json:"data"`
		ExpectEncodedDataJSON string          `json:"expect_encoded_data_json"`
		File                  string          `json:"file"`
		Valid                 bool            `json:"valid"`
		Reason                string          `json:"reason"`
	} `json:"cases"`
}

func runDataShape(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	var blk dataShapeBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	prod, canProduce := b.(EnvelopeProducer)
	dec, canDecode := b.(EnvelopeDecoder)
	if !canProduce && !canDecode {
		return nil, false, nil
	}
	var out []namedCase
	for i, c := range blk.Cases {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error {
			switch c.Mode {
			case "encode":
				if !canProduce {
					return skipCase{"binding does not produce envelopes"}
				}
				body, err := prod.ProduceEnvelope(c.URN, c.Queue, c.Data)
				if err != nil {
					return fmt.Errorf("produce: %w", err)
				}
				var top map[string]json.RawMessage
				if err := json.Unmarshal(body, &top); err != nil {
					return fmt.Errorf("produced bytes are not a JSON object: %v", err)
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, top["data"]); err != nil {
					return fmt.Errorf("produced data is not JSON: %v", err)
				}
				if compact.String() != c.ExpectEncodedDataJSON {
					return fmt.Errorf("data encoded as %s, want %s", compact.String(), c.ExpectEncodedDataJSON)
				}
				return nil
			case "decode":
				if !canDecode {
					return skipCase{"binding does not decode envelopes"}
				}
				body, err := s.ReadFile(c.File)
				if err != nil {
					return err
				}
				_, derr := dec.DecodeEnvelope(body)
				if accepted := derr == nil; accepted != c.Valid {
					return fmt.Errorf("accepted = %v, want %v (%s)", accepted, c.Valid, c.Reason)
				}
				return nil
			default:
				return fmt.Errorf("%w: unknown data_shape mode %q", ErrSuite, c.Mode)
			}
		}})
	}
	return out, true, nil
}

// roundTripBlock is the canonical "roundtrip" block.
type roundTripBlock struct {
	Cases []struct {
		Name            string                     `json:"name"`
		File            string                     `json:"file"`
		ExpectAttempts  int                        `json:"expect_attempts"`
		ExpectPreserved map[string]json.RawMessage `json:"expect_preserved"`
	} `json:"cases"`
}

func runRoundTrip(_ context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	var blk roundTripBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	rt, ok := b.(RoundTripper)
	if !ok {
		return nil, false, nil
	}
	var out []namedCase
	for i, c := range blk.Cases {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error {
			body, err := s.ReadFile(c.File)
			if err != nil {
				return err
			}
			got, err := rt.IncrementAttempts(body)
			if err != nil {
				return fmt.Errorf("round trip: %w", err)
			}
			doc, err := parseJSON(got)
			if err != nil {
				return fmt.Errorf("re-encoded bytes are not JSON: %v", err)
			}
			var errs []string
			if a, _ := pointer(doc, "/attempts"); !jsonEqual(a, json.Number(fmt.Sprint(c.ExpectAttempts))) {
				errs = append(errs, fmt.Sprintf("attempts = %v, want %d", a, c.ExpectAttempts))
			}
			for _, ptr := range sortedKeys(c.ExpectPreserved) {
				want, err := parseJSON(c.ExpectPreserved[ptr])
				if err != nil {
					return fmt.Errorf("%w: %s: %v", ErrSuite, ptr, err)
				}
				v, found := pointer(doc, ptr)
				if !found {
					errs = append(errs, ptr+" missing after re-encode")
				} else if !jsonEqual(v, want) {
					errs = append(errs, fmt.Sprintf("%s = %v, want %s", ptr, v, c.ExpectPreserved[ptr]))
				}
			}
			return joinErrs(errs)
		}})
	}
	return out, true, nil
}
