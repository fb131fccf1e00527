package kafka

import (
	"context"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// PublishFrom writes body to queue with the key of the reserved record
// from, in two modes:
//
//   - Restore: queue is the topic of the reserved record and body the body
//     Pop returned for it. The record is written again verbatim - value (a
//     null value stays null), headers and key - with a fresh timestamp
//     (Send's IntentRestore).
//   - Republish: anything else is written like Publish - CONTRACT.md 6 projection,
//     created_at timestamp - with the reserved record's key byte for byte.
//     When the body projects no bq-job (a poison body) the record's bq-job
//     is kept. Only a republish onto the record's own topic also forwards
//     its traceparent and tracestate; a write to another topic starts a
//     fresh trace.
//
// The key is the reserved record's, byte for byte: an empty key stays empty
// and a null key null (recordkeys.go). A from this transport did not
// reserve gives a keyless record, as Publish does.
func (t *Transport) PublishFrom(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage) error {
	if wire.IsBlank(queue) {
		return ErrEmptyTopic
	}
	d, ok := recordOf(from)
	if !ok {
		return t.Publish(ctx, queue, body)
	}
	out := &driver.Outgoing{Intent: driver.IntentRestore, Queue: queue, Body: body, From: from}
	if queue == d.msg.Topic && body == from.Body {
		return t.write(ctx, queue, t.restored(out, true))
	}
	out.Intent = driver.IntentRedrive
	if queue == d.msg.Topic {
		out.Headers = make(map[string]string, 2)
		for _, k := range [...]string{wire.HeaderTraceparent, wire.HeaderTracestate} {
			if v, ok := lastHeader(d.msg.Headers, k); ok {
				out.Headers[k] = v
			}
		}
	}
	return t.write(ctx, queue, t.republished(out, true))
}

// PublishFromWithHeaders writes body like the republish mode of
// PublishFrom, plus out-of-band headers with the rules of
// PublishWithHeaders. The republish mode writes the projection, the
// created_at timestamp and the reserved record's key, and keeps its bq-job
// for a body without one. There is no restore mode and no trace forwarding:
// the caller passes the headers it wants. A from this transport did not
// reserve gives a keyless record.
func (t *Transport) PublishFromWithHeaders(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	if wire.IsBlank(queue) {
		return ErrEmptyTopic
	}
	if _, ok := recordOf(from); !ok {
		return t.PublishWithHeaders(ctx, queue, body, headers)
	}
	out := &driver.Outgoing{Intent: driver.IntentRedrive, Queue: queue, Body: body, From: from, Headers: headers}
	return t.write(ctx, queue, t.republished(out, true))
}
