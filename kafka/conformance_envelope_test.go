package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/babelqueue/babelqueue-go/conformance"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

var _ conformance.EnvelopeWriter = conformanceBinding{}

// WriteEnvelope publishes the envelope with babelqueue.App.Publish over
// the transport (in-memory writer) and returns the record value written.
func (conformanceBinding) WriteEnvelope(ctx context.Context, in conformance.NewEnvelope) ([]byte, error) {
	data, err := in.DataMap()
	if err != nil {
		return nil, err
	}
	m, err := newMem()
	if err != nil {
		return nil, err
	}
	defer m.tr.Close()
	app, err := babelqueue.NewApp(m.tr, babelqueue.WithDefaultQueue(in.Queue))
	if err != nil {
		return nil, err
	}
	if _, err := app.Publish(ctx, in.URN, data, babelqueue.WithEnvelopeOptions(babelqueue.WithTraceID(in.TraceID),
		babelqueue.WithID(in.ID), babelqueue.WithCreatedAt(time.UnixMilli(in.CreatedAt)))); err != nil {
		return nil, err
	}
	w := m.written()
	if len(w) != 1 || w[0].Topic != in.Queue {
		return nil, fmt.Errorf("%d records written, want 1 to %s", len(w), in.Queue)
	}
	return w[0].Value, nil
}
