package otel

import (
	"context"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// One small type per optional capability, each forwarding to the
// decorator core. wrapCapabilities (capabilities_gen.go) embeds exactly the
// ones the wrapped transport implements, so that an interface assertion on
// the decorator succeeds if and only if it succeeds on the wrapped
// transport.

type capHeaderPublisher struct{ t *transport }

func (c capHeaderPublisher) PublishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error {
	return c.t.publishWithHeaders(ctx, queue, body, headers)
}

type capKeyedRepublisher struct{ t *transport }

func (c capKeyedRepublisher) PublishFrom(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage) error {
	return c.t.publishFrom(ctx, queue, body, from)
}

type capHeaderRepublisher struct{ t *transport }

func (c capHeaderRepublisher) PublishFromWithHeaders(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	return c.t.publishFromWithHeaders(ctx, queue, body, from, headers)
}

type capForwarder struct{ t *transport }

func (c capForwarder) Forward(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	return c.t.forward(ctx, queue, body, from, headers)
}

type capRewinder struct{ t *transport }

func (c capRewinder) Rewind(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	return c.t.rewind(ctx, msg)
}

type capNegativeAcknowledger struct{ t *transport }

func (c capNegativeAcknowledger) Nack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	return c.t.nack(ctx, msg)
}

type capDelayedPublisher struct{ t *transport }

func (c capDelayedPublisher) PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	return c.t.publishDelayed(ctx, queue, body, delay)
}

type capDelayedHeaderPublisher struct{ t *transport }

func (c capDelayedHeaderPublisher) PublishDelayedWithHeaders(ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error {
	return c.t.publishDelayedWithHeaders(ctx, queue, body, delay, headers)
}

type capTieredRetrier struct{ t *transport }

func (c capTieredRetrier) PublishRetryForAttempt(ctx context.Context, from *babelqueue.ReceivedMessage, attemptsBefore int) error {
	return c.t.publishRetryForAttempt(ctx, from, attemptsBefore)
}

type capRetrier struct{ t *transport }

func (c capRetrier) Retry(ctx context.Context, msg *babelqueue.ReceivedMessage, counted int) error {
	return c.t.retry(ctx, msg, counted)
}
