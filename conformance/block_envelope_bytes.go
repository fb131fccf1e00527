package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

func init() {
	register("babelqueue_go.envelope_bytes", "EnvelopeWriter", runEnvelopeBytes)
}

type envelopeBytesCase struct {
	Name      string          `json:"name"`
	URN       string          `json:"urn"`
	Queue     string          `json:"queue"`
	TraceID   string          `json:"trace_id"`
	ID        string          `json:"id"`
	CreatedAt int64           `json:"created_at"`
	Data      json.RawMessage `json:"data"`
	Output    Payload         `json:"output"`
}

func runEnvelopeBytes(ctx context.Context, s *Suite, raw json.RawMessage, b Binding) ([]namedCase, bool, error) {
	return eachCase(raw, b, func(c envelopeBytesCase) string { return c.Name }, func(w EnvelopeWriter, c envelopeBytesCase) error {
		got, err := w.WriteEnvelope(ctx, NewEnvelope{URN: c.URN, Queue: c.Queue, TraceID: c.TraceID, ID: c.ID, CreatedAt: c.CreatedAt, Data: c.Data})
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return exactOutput(s, got, c.Output)
	})
}

// DataMap decodes n.Data into the map a Go producer is handed, numbers as
// json.Number so their digits are kept.
func (n NewEnvelope) DataMap() (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(n.Data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: data: %w", ErrSuite, err)
	}
	return m, nil
}
