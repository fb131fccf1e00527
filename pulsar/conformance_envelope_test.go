package pulsar

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/conformance"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

var _ conformance.EnvelopeWriter = conformanceBinding{}

// WriteEnvelope publishes the envelope with babelqueue.App.Publish over
// the Transport (fake client) and returns the payload sent.
func (b conformanceBinding) WriteEnvelope(ctx context.Context, in conformance.NewEnvelope) ([]byte, error) {
	data, err := in.DataMap()
	if err != nil {
		return nil, err
	}
	s := newFake(b.t, WithSubscriptionType(pulsar.Shared))
	app, err := babelqueue.NewApp(s.tr, babelqueue.WithDefaultQueue(in.Queue))
	if err != nil {
		return nil, err
	}
	if _, err := app.Publish(ctx, in.URN, data, babelqueue.WithEnvelopeOptions(babelqueue.WithTraceID(in.TraceID),
		babelqueue.WithID(in.ID), babelqueue.WithCreatedAt(time.UnixMilli(in.CreatedAt)))); err != nil {
		return nil, err
	}
	sent := s.fc.producer(in.Queue).messages()
	if len(sent) != 1 {
		return nil, fmt.Errorf("%d messages sent to %s, want 1", len(sent), in.Queue)
	}
	return sent[0].Payload, nil
}
