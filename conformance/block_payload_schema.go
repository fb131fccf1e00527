package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/schema"
)

// The payload_schema block (per-URN schemas of data, the rule stated in
// schema/README.md) is broker-free: it checks the schema
// module's Registry, which validates the data object whatever binding
// carries it, so it runs for every binding.
func init() {
	register("payload_schema", "schema.Registry", runPayloadSchema)
}

type payloadSchemaBlock struct {
	Schema json.RawMessage `json:"schema"`
	Cases  []struct {
		Name  string          `json:"name"`
		Valid *bool           `json:"valid"`
		Data  json.RawMessage `json:"data"`
	} `json:"cases"`
}

const payloadSchemaURN = "urn:conformance:payload_schema"

func runPayloadSchema(_ context.Context, _ *Suite, raw json.RawMessage, _ Binding) ([]namedCase, bool, error) {
	var blk payloadSchemaBlock
	if err := decodeBlock(raw, &blk); err != nil {
		return nil, false, err
	}
	if len(blk.Schema) == 0 {
		return nil, false, fmt.Errorf("%w: payload_schema has no schema", ErrSuite)
	}
	reg := schema.NewRegistry()
	if err := reg.Register(payloadSchemaURN, blk.Schema); err != nil {
		return nil, false, fmt.Errorf("%w: payload_schema: %v", ErrSuite, err)
	}
	out := make([]namedCase, 0, len(blk.Cases))
	for i, c := range blk.Cases {
		out = append(out, namedCase{name: caseName(c.Name, i), run: func() error {
			if c.Valid == nil || len(c.Data) == 0 {
				return fmt.Errorf("%w: case needs valid and data", ErrSuite)
			}
			err := reg.ValidatePayload(payloadSchemaURN, c.Data)
			switch {
			case *c.Valid && err != nil:
				return fmt.Errorf("data %s rejected: %v", c.Data, err)
			case !*c.Valid && err == nil:
				return fmt.Errorf("data %s accepted, want rejected", c.Data)
			case err != nil && !errors.Is(err, babelqueue.ErrInvalidPayload):
				return fmt.Errorf("rejection %v does not match ErrInvalidPayload", err)
			}
			return nil
		}})
	}
	return out, true, nil
}
