package kafka

import (
	"context"
	"sort"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	kafkago "github.com/segmentio/kafka-go"
)

// PublishFrom implements babelqueue.KeyedRepublisher, in two modes:
//
//   - Restore: queue is the topic of the reserved record and body the body
//     Pop returned for it. The record is written again verbatim - value (a
//     null value stays null), headers and key - with a fresh timestamp;
//     nothing is projected from the body.
//   - Republish: anything else (a retry without tiers, a redrive, a dead
//     letter) is written like Publish - §6 projection, created_at
//     timestamp - with the reserved record's key byte for byte (a null key
//     stays null). When the body projects no bq-job (a poison body) the
//     record's bq-job is kept. Only a republish onto the record's own topic
//     also forwards its traceparent and tracestate; a write to another
//     topic starts a fresh trace.
//
// kafka-go delivers an empty key as nil, so a record read through Pop with
// an empty key is republished with a null key. A from this transport did
// not reserve gives a keyless record, as Publish does.
func (t *Transport) PublishFrom(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage) error {
	if babelqueue.IsBlank(queue) {
		return ErrEmptyTopic
	}
	d, ok := recordOf(from)
	if !ok {
		return t.Publish(ctx, queue, body)
	}
	if queue == d.msg.Topic && body == from.Body {
		return t.write(ctx, queue, kafkago.Message{
			Topic:   queue,
			Key:     d.msg.Key,
			Value:   d.msg.Value,
			Headers: append([]kafkago.Header(nil), d.msg.Headers...),
			Time:    t.cfg.clock.Now(),
		})
	}
	msg := t.republished(queue, body, d, nil)
	if queue == d.msg.Topic {
		hs := forwardTrace(fromKafkaHeaders(msg.Headers), d.msg.Headers)
		msg.Headers = toKafkaHeaders(hs)
	}
	return t.write(ctx, queue, msg)
}

// PublishFromWithHeaders implements babelqueue.HeaderRepublisher: body is
// written like the republish mode of PublishFrom (projection, created_at
// timestamp, the reserved record's key, its bq-job kept for a body without
// one) plus the out-of-band headers with the rules of PublishWithHeaders.
// There is no restore mode and no automatic trace forwarding: the caller
// passes the headers it wants. A from this transport did not reserve gives
// a keyless record.
func (t *Transport) PublishFromWithHeaders(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	if babelqueue.IsBlank(queue) {
		return ErrEmptyTopic
	}
	d, ok := recordOf(from)
	if !ok {
		return t.PublishWithHeaders(ctx, queue, body, headers)
	}
	return t.write(ctx, queue, t.republished(queue, body, d, headers))
}

// Forward implements babelqueue.Forwarder: body is written to queue
// exactly as given, with exactly the headers passed (contract bq- headers
// included, blank keys skipped, in key order), nothing projected from the
// body, and the reserved record's key byte for byte. When body and headers
// are those of the reserved record, its headers keep their original order.
// The App uses it to move a version-gated record to its dead-letter topic
// unchanged, and Redrive to write a kept dead letter back.
func (t *Transport) Forward(ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	if babelqueue.IsBlank(queue) {
		return ErrEmptyTopic
	}
	var key []byte
	d, ok := recordOf(from)
	if ok {
		key = d.msg.Key
		if body == string(d.msg.Value) && sameHeaders(d.msg.Headers, headers) {
			// Moving the record unchanged: keep its header order too.
			return t.write(ctx, queue, kafkago.Message{
				Topic:   queue,
				Key:     key,
				Value:   d.msg.Value,
				Headers: append([]kafkago.Header(nil), d.msg.Headers...),
				Time:    t.cfg.clock.Now(),
			})
		}
	}
	keys := make([]string, 0, len(headers))
	for k := range headers {
		if !babelqueue.IsBlank(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	hs := make([]kafkago.Header, len(keys))
	for i, k := range keys {
		hs[i] = kafkago.Header{Key: k, Value: []byte(headers[k])}
	}
	return t.write(ctx, queue, kafkago.Message{
		Topic:   queue,
		Key:     key,
		Value:   []byte(body),
		Headers: hs,
		Time:    t.cfg.clock.Now(),
	})
}

// sameHeaders reports whether m is exactly the header map of hs: each key
// once, with the same value.
func sameHeaders(hs []kafkago.Header, m map[string]string) bool {
	if len(hs) != len(m) {
		return false
	}
	for _, h := range hs {
		if v, ok := m[h.Key]; !ok || v != string(h.Value) {
			return false
		}
	}
	return true
}

func (t *Transport) republished(queue, body string, d *delivery, extra map[string]string) kafkago.Message {
	hs, ts := projection(body, t.cfg.clock.Now())
	hs = keepRouting(hs, d.msg.Headers)
	hs = withExtra(hs, extra)
	return kafkago.Message{
		Topic:   queue,
		Key:     d.msg.Key,
		Value:   []byte(body),
		Headers: toKafkaHeaders(hs),
		Time:    ts,
	}
}

func fromKafkaHeaders(hs []kafkago.Header) headerSet {
	out := make(headerSet, 0, len(hs))
	for _, h := range hs {
		out.set(h.Key, string(h.Value))
	}
	return out
}
