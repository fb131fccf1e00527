package pulsar

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Publish writes body to the topic of queue with the §5 property projection
// (bq-job, bq-trace-id, bq-message-id, bq-schema-version, bq-source-lang,
// bq-attempts, each only when the body holds it) and the event time set to
// meta.created_at. It returns once the broker acknowledged the write.
func (t *Transport) Publish(ctx context.Context, queue, body string) error {
	return t.PublishWithHeaders(ctx, queue, body, nil)
}

// PublishWithHeaders is Publish with out-of-band properties (for example
// traceparent) beside the contract ones. A contract property wins a key
// collision; blank keys and values are skipped.
func (t *Transport) PublishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error {
	msg := projected(body, headers)
	return t.send(ctx, "publish", t.Topic(queue), msg)
}

// PublishDelayed is Publish with Pulsar's native DeliverAfter: the broker
// delivers the message no sooner than delay from now. A delay of zero or
// less publishes at once. The broker honours the delay only for Shared and
// KeyShared subscriptions; others receive the message at once.
func (t *Transport) PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	return t.PublishDelayedWithHeaders(ctx, queue, body, delay, nil)
}

// PublishDelayedWithHeaders implements babelqueue.DelayedHeaderPublisher:
// it is PublishDelayed with out-of-band properties, with the collision rules
// of PublishWithHeaders (a contract property wins; blank keys and values
// are skipped). The properties are delivered with the message when the
// delay has passed.
func (t *Transport) PublishDelayedWithHeaders(ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error {
	msg := projected(body, headers)
	if delay > 0 {
		msg.DeliverAfter = delay
	}
	return t.send(ctx, "publish delayed", t.Topic(queue), msg)
}

// PublishFrom is Publish that keeps the message key and the ordering key of
// the reserved message from, byte for byte. A from that this Transport did
// not return is treated as a message without keys.
func (t *Transport) PublishFrom(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage) error {
	return t.PublishFromWithHeaders(ctx, queue, body, from, nil)
}

// PublishFromWithHeaders is PublishFrom with out-of-band properties, with
// the collision rules of PublishWithHeaders.
func (t *Transport) PublishFromWithHeaders(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	msg := projected(body, headers)
	if d := deliveryOf(from); d != nil {
		msg.Key = d.msg.Key()
		msg.OrderingKey = d.msg.OrderingKey()
	}
	return t.send(ctx, "publish", t.Topic(queue), msg)
}

// Forward writes body to queue exactly as given: properties are headers as
// passed, nothing is projected from the body, and the key, ordering key and
// event time of from are kept.
func (t *Transport) Forward(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	msg := &pulsar.ProducerMessage{Payload: []byte(body)}
	if len(headers) > 0 {
		msg.Properties = make(map[string]string, len(headers))
		for k, v := range headers {
			msg.Properties[k] = v
		}
	}
	if d := deliveryOf(from); d != nil {
		msg.Key = d.msg.Key()
		msg.OrderingKey = d.msg.OrderingKey()
		msg.EventTime = d.msg.EventTime()
	}
	return t.send(ctx, "forward", t.Topic(queue), msg)
}

// projected builds the message of body with the contract properties
// projected from it, followed by the extra headers the contract does not
// claim.
func projected(body string, extra map[string]string) *pulsar.ProducerMessage {
	b := []byte(body)
	p := babelqueue.ProjectBody(b)
	msg := &pulsar.ProducerMessage{Payload: b, Properties: properties(&p, extra)}
	if p.HasCreatedAt && p.CreatedAt > 0 {
		msg.EventTime = time.UnixMilli(p.CreatedAt)
	}
	return msg
}

// properties returns the properties babelqueue.MergeHeaders gives for the
// headers of p and extra, as the map Pulsar takes, or nil when there are
// none. It fills the map directly, without the intermediate slices and the
// key sort of MergeHeaders (a map has no order), since it runs once per
// published message: entries of extra whose key or value is blank are
// skipped, and a contract property that is not blank wins a collision.
func properties(p *babelqueue.Projection, extra map[string]string) map[string]string {
	contract := [...]babelqueue.Header{
		{Key: babelqueue.HeaderJob, Value: p.Job},
		{Key: babelqueue.HeaderTraceID, Value: p.TraceID},
		{Key: babelqueue.HeaderMessageID, Value: p.MessageID},
		{Key: babelqueue.HeaderSchemaVersion, Value: p.SchemaVersion},
		{Key: babelqueue.HeaderSourceLang, Value: p.SourceLang},
		{Key: babelqueue.HeaderAttempts, Value: p.Attempts},
	}
	n := 0
	for _, h := range contract {
		if !babelqueue.IsBlank(h.Value) {
			contract[n] = h
			n++
		}
	}
	if n == 0 && len(extra) == 0 {
		return nil
	}
	props := make(map[string]string, n+len(extra))
	for k, v := range extra {
		if !babelqueue.IsBlank(k) && !babelqueue.IsBlank(v) {
			props[k] = v
		}
	}
	for _, h := range contract[:n] {
		props[h.Key] = h.Value
	}
	if len(props) == 0 {
		return nil
	}
	return props
}

// send writes msg to topic and waits for the broker's acknowledgement.
func (t *Transport) send(ctx context.Context, op, topic string, msg *pulsar.ProducerMessage) error {
	p, err := t.producerFor(topic)
	if err != nil {
		return err
	}
	if _, err := p.Send(ctx, msg); err != nil {
		if t.isClosed() {
			return errClosed(op + " to " + topic)
		}
		return fmt.Errorf("pulsar: %s to %s: %w", op, topic, err)
	}
	return nil
}
