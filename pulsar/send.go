package pulsar

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Features reports keys, headers, delayed publish, a retry the binding
// settles itself, HandBack by negative acknowledgement, and an Ack that
// uses no context. Keys are the Pulsar key and ordering key, headers are
// properties, a delay is DeliverAfter, and Send of IntentRetry acknowledges
// or negatively acknowledges the original.
func (t *Transport) Features() driver.Features {
	return driver.Features{
		Keys:         true,
		Headers:      true,
		Delay:        true,
		SettlesRetry: true,
		HandBack:     driver.HandBackNack,
		// Ack ignores its context: the client acknowledges (or, with
		// AckWithResponse, waits for the broker) on its own terms.
		AckNonBlocking: true,
	}
}

// Send writes out to the topic of out.Queue and returns once the broker
// acknowledged it. The properties are driver.OutgoingHeaders(out) (on
// IntentRetry the bq-attempts of out.Headers wins over the body's); the
// key and ordering key are out.Key when set, else those of out.From. The
// event time is meta.created_at of the body, except for IntentRetry,
// IntentForward and IntentRestore, which keep the event time of out.From.
// A delay (IntentPublish) uses DeliverAfter. IntentRetry also settles
// out.From (see Retry for its rules). DESIGN.md has the details. An error
// matching babelqueue.ErrPublishUnknown means the message may be stored
// (the outcome is unknown); any other error means nothing was written
// (publish_outcome.go). The publish calls below inherit this.
func (t *Transport) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	if out == nil {
		return noReceipt, fmt.Errorf("pulsar: send: %w: nil message", babelqueue.ErrInvalidOption)
	}
	if out.Intent == driver.IntentRetry {
		return t.sendRetry(ctx, out)
	}
	id, err := t.sendOut(ctx, out)
	if err != nil {
		return noReceipt, err
	}
	var delay time.Duration
	if out.Intent == driver.IntentPublish && out.Delay > 0 {
		delay = out.Delay // the DeliverAfter message gave it
	}
	return receipt(id, delay), nil
}

// sendNew writes out, a new message (IntentPublish), as Send does, without
// the receipt the publish calls drop: formatting the message ID for it
// cost a sixth of a publish's own CPU.
func (t *Transport) sendNew(ctx context.Context, out *driver.Outgoing) error {
	_, err := t.sendOut(ctx, out)
	return err
}

// Publish writes body to the topic of queue with the CONTRACT.md 5 property
// projection and the event time set to meta.created_at. The projection is
// bq-job, bq-trace-id, bq-message-id, bq-schema-version, bq-source-lang and
// bq-attempts, each only when the body holds it. It returns once the broker
// acknowledged the write.
func (t *Transport) Publish(ctx context.Context, queue, body string) error {
	return t.publish(ctx, queue, body, nil, 0)
}

// PublishWithHeaders is Publish with out-of-band properties (for example
// traceparent) beside the contract ones. A contract property wins a key
// collision; blank keys and values are skipped.
func (t *Transport) PublishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error {
	return t.publish(ctx, queue, body, headers, 0)
}

// PublishDelayed is Publish with Pulsar's native DeliverAfter: the broker
// delivers the message no sooner than delay from now. A delay of zero or
// less publishes at once. The broker honours the delay only for Shared and
// KeyShared subscriptions; others receive the message at once.
func (t *Transport) PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	return t.publish(ctx, queue, body, nil, delay)
}

func (t *Transport) publish(ctx context.Context, queue, body string, headers map[string]string, delay time.Duration) error {
	return t.sendNew(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Headers: headers, Delay: delay})
}

// noReceipt is the receipt of a write that did not happen.
var noReceipt = driver.Receipt{Partition: -1}

// receipt reports a write the broker acknowledged with id.
func receipt(id pulsar.MessageID, delay time.Duration) driver.Receipt {
	r := driver.Receipt{Partition: -1, Delay: delay}
	if id != nil {
		r.Partition, r.ID = id.PartitionIdx(), id.String()
	}
	return r
}

// message builds the Pulsar message of out (see Send).
func message(out *driver.Outgoing) *pulsar.ProducerMessage {
	msg := new(pulsar.ProducerMessage)
	fillMessage(msg, out, nil)
	return msg
}

// fillMessage writes the Pulsar message of out (see Send) into msg, a zero
// message. The properties go into props, an empty map, when it is not nil
// (a reused write, send_reuse.go), else into a new map.
func fillMessage(msg *pulsar.ProducerMessage, out *driver.Outgoing, props map[string]string) {
	d := deliveryOf(out.From)
	msg.Payload = payloadOf(out.Body)
	if out.Intent.Verbatim() {
		msg.Properties = verbatim(out.Headers)
	} else {
		projected(msg, out, props)
	}
	switch out.Intent {
	case driver.IntentPublish:
		if out.Delay > 0 {
			msg.DeliverAfter = out.Delay
		}
	case driver.IntentRetry, driver.IntentForward, driver.IntentRestore:
		if d != nil {
			msg.EventTime = d.msg.EventTime()
		}
	}
	switch {
	case out.Key != nil:
		k := string(out.Key)
		msg.Key, msg.OrderingKey = k, k
	case d != nil:
		msg.Key, msg.OrderingKey = d.msg.Key(), d.msg.OrderingKey()
	}
}

// projected sets the properties and event time of msg, the message of
// out.Body written for out.Intent: the contract properties of the body's
// projection (out.Projection, which an App that just encoded the body
// already knows, so the body is not parsed again), the extra headers
// out.Headers beside them (see properties), put into into when it is not
// nil.
func projected(msg *pulsar.ProducerMessage, out *driver.Outgoing, into map[string]string) {
	p := out.Projection()
	msg.Properties = properties(&p, out.Headers, out.Intent, into)
	if p.HasCreatedAt && p.CreatedAt > 0 {
		msg.EventTime = time.UnixMilli(p.CreatedAt)
	}
}

// payloadOf returns body as the payload of a message without copying it:
// a string is never modified, and pulsar-client-go only reads a payload
// (it batches, compresses or encrypts into buffers of its own).
func payloadOf(body string) []byte {
	if body == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(body), len(body))
}

// properties returns the headers driver.OutgoingHeaders gives for a
// projection p and extra, as the map Pulsar takes, or nil when there are
// none. It fills into when that is not nil (it must be empty), else a new
// map of the exact size, directly, without the intermediate slices and
// the key sort of wire.MergeHeaders (a map has no order), since it runs
// once per published message: entries of extra whose key or value is blank
// are skipped, a contract property that is not blank wins a collision, and
// a non-blank bq-job of extra wins over the projected one when the intent
// keeps the route.
//
// One addition: on IntentRetry a non-blank bq-attempts of extra, the count
// the retry was decided with, wins over the body's. The App sends a body
// whose attempts already equal it, so the result is OutgoingHeaders'; a
// retried poison body, republished byte for byte (CONTRACT.md 5), must not pin
// the count to its own stale attempts.
func properties(p *wire.Projection, extra map[string]string, intent driver.Intent, into map[string]string) map[string]string {
	contract := [...]wire.Header{
		{Key: wire.HeaderJob, Value: p.Job},
		{Key: wire.HeaderTraceID, Value: p.TraceID},
		{Key: wire.HeaderMessageID, Value: p.MessageID},
		{Key: wire.HeaderSchemaVersion, Value: p.SchemaVersion},
		{Key: wire.HeaderSourceLang, Value: p.SourceLang},
		{Key: wire.HeaderAttempts, Value: p.Attempts},
	}
	n := 0
	for _, h := range contract {
		if !wire.IsBlank(h.Value) {
			contract[n] = h
			n++
		}
	}
	if n == 0 && len(extra) == 0 {
		return nil
	}
	props := into
	if props == nil {
		props = make(map[string]string, n+len(extra))
	}
	for k, v := range extra {
		if !wire.IsBlank(k) && !wire.IsBlank(v) {
			props[k] = v
		}
	}
	for _, h := range contract[:n] {
		props[h.Key] = h.Value
	}
	if intent.KeepsRoute() {
		if job, ok := extra[wire.HeaderJob]; ok && !wire.IsBlank(job) {
			props[wire.HeaderJob] = job
		}
	}
	if intent == driver.IntentRetry {
		if n, ok := extra[wire.HeaderAttempts]; ok && !wire.IsBlank(n) {
			props[wire.HeaderAttempts] = n
		}
	}
	if len(props) == 0 {
		return nil
	}
	return props
}

// verbatim returns the entries of headers whose key is not blank (blank
// values kept) as a new map, or nil when there are none (IntentForward,
// IntentRestore).
func verbatim(headers map[string]string) map[string]string {
	var props map[string]string
	for k, v := range headers {
		if wire.IsBlank(k) {
			continue
		}
		if props == nil {
			props = make(map[string]string, len(headers))
		}
		props[k] = v
	}
	return props
}

// sendOut writes the message of out to the topic of out.Queue through its
// producer and waits for the broker's acknowledgement. A producer the
// Transport created writes through a reused write (send_reuse.go).
func (t *Transport) sendOut(ctx context.Context, out *driver.Outgoing) (pulsar.MessageID, error) {
	op, topic := out.Intent.String(), t.Topic(out.Queue)
	p, err := t.producerFor(topic)
	if err != nil {
		return nil, err
	}
	var id pulsar.MessageID
	if o, ok := p.(outcomeProducer); ok && o.async != nil {
		w := takeWrite()
		fillMessage(&w.msg, out, w.props)
		id, err = o.sendWrite(ctx, w)
	} else {
		id, err = p.Send(ctx, message(out))
	}
	if err != nil {
		if t.isClosed() {
			return nil, errClosed(op + " to " + topic)
		}
		if tooBig(err) {
			return nil, fmt.Errorf("pulsar: %s to %s: %w: %w", op, topic, driver.ErrTooLarge, err)
		}
		return nil, fmt.Errorf("pulsar: %s to %s: %w", op, topic, err)
	}
	return id, nil
}
