package kafka

import (
	"context"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Publish writes body to the topic queue, keyless, and returns once the
// broker acknowledged it: Send of IntentPublish. The record value is body
// unchanged; the CONTRACT.md 6 contract fields are projected onto headers (bq-job,
// bq-trace-id, bq-message-id, bq-schema-version, bq-source-lang,
// bq-attempts; a field the body lacks is left out) and the timestamp is
// meta.created_at (the publish time when the body has none). A Publish
// with no other write in flight is sent at once; concurrent publishers to a
// partition share a batch, held open at most the linger (WithLinger). An
// error matching babelqueue.ErrPublishUnknown means the record may be stored
// (the outcome is unknown); any other error means nothing was written
// (publish_outcome.go). The same holds for every publish call and Send.
func (t *Transport) Publish(ctx context.Context, queue, body string) error {
	return t.PublishWithHeaders(ctx, queue, body, nil)
}

// PublishWithHeaders is Publish with out-of-band headers (such as a W3C
// traceparent) appended beside the projection in key order. A contract
// header wins a key collision, blank keys and values are skipped, and
// bq-delay and bq-original-topic are never taken from headers. A nil or
// empty map behaves exactly like Publish.
func (t *Transport) PublishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error {
	_, err := t.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Headers: headers})
	return err
}

// PublishKeyed is Publish with a record key, written byte for byte; the
// records of one key keep their order. The key picks the partition with
// murmur2, as the Java client does. A nil key writes a keyless (null key)
// record, exactly as Publish; an empty non-nil key is written as an empty
// key.
func (t *Transport) PublishKeyed(ctx context.Context, queue string, key []byte, body string) error {
	_, err := t.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Key: key})
	return err
}

// PublishBatch writes bodies to queue as Publish does, in as few produce
// requests as the batch limits allow. The records are handed to the writer
// together. It returns once every record was acknowledged, or with an
// error: driver.SendErrors when the records had different outcomes (one
// entry per body, as SendBatch), else one error for all of them, matching
// babelqueue.ErrPublishUnknown when they may be stored. Records keep their
// relative order per partition.
func (t *Transport) PublishBatch(ctx context.Context, queue string, bodies ...string) error {
	if wire.IsBlank(queue) {
		return ErrEmptyTopic
	}
	if len(bodies) == 0 {
		return nil
	}
	msgs := make([]kafkago.Message, len(bodies))
	headers := make([]kafkago.Header, 0, maxContractHeaders*len(bodies))
	for i, b := range bodies {
		out := driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: b}
		msgs[i], headers = t.publishRecordInto(&out, headers)
	}
	return t.writeBatch(ctx, msgs)
}
