package kafka

import (
	"context"
	"fmt"
	"strconv"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	kafkago "github.com/segmentio/kafka-go"
)

// PublishRetryForAttempt implements babelqueue.TieredRetrier (§6.5): it
// writes the reserved record from to the retry tier n = min(attemptsBefore,
// N-1) + 1 of the N configured tiers. The copy carries attempts =
// attemptsBefore+1 in the bq-attempts header and in the body (only that
// number changes; a body that cannot hold it is written as received),
// bq-delay = the tier in milliseconds, bq-original-topic = the record's
// topic, the record key byte for byte, the delivery's traceparent,
// tracestate, baggage, babelqueue-retry-link (the otel module's link to the
// failed attempt), bq-replay-bypass (a redriven message stays a replay on
// its retries) and bq-redrive-count (the replay-count guard of a later
// redrive reads it), each taken from from.Headers, else from the reserved
// record, the incoming bq-job when the body has none (a poison body), and
// the §6 projection of the body; no other header, and each once, so the
// header set never grows from hop to hop. Its timestamp is the publish
// time, from which the Reinjector counts the tier. The caller commits the
// original afterwards (Ack). With no tiers it returns ErrDelayUnsupported
// and writes nothing.
func (t *Transport) PublishRetryForAttempt(ctx context.Context, from *babelqueue.ReceivedMessage, attemptsBefore int) error {
	if len(t.cfg.tiers) == 0 {
		return ErrDelayUnsupported
	}
	if from == nil || babelqueue.IsBlank(from.Queue) {
		return ErrEmptyTopic
	}
	n := TierForAttempt(attemptsBefore, len(t.cfg.tiers))
	tier := t.cfg.tiers[n-1]
	return t.writeRetry(ctx, from, n, max(attemptsBefore, 0)+1, tier)
}

// PublishRetry writes the reserved record from to the smallest retry tier
// that covers delay, with attempts (body and bq-attempts) = the delivery's
// attempts + 1 and bq-delay = delay in milliseconds; otherwise like
// PublishRetryForAttempt. It returns ErrDelayUnsupported, writing nothing,
// when no tier covers delay.
//
// Deprecated: §6.5 picks the retry tier from the attempt count, not from a
// delay. Use PublishRetryForAttempt.
func (t *Transport) PublishRetry(ctx context.Context, from *babelqueue.ReceivedMessage, delay time.Duration) error {
	n := TierForDelay(delay, t.cfg.tiers)
	if n == 0 {
		return fmt.Errorf("%w: delay %v", ErrDelayUnsupported, delay)
	}
	if from == nil || babelqueue.IsBlank(from.Queue) {
		return ErrEmptyTopic
	}
	return t.writeRetry(ctx, from, n, deliveredAttempts(from)+1, delay)
}

// PublishDelayed implements babelqueue.DelayedPublisher: it writes body to
// the smallest retry tier of queue whose delay is at least delay, with the
// §6 projection, bq-delay = that tier in milliseconds and bq-original-topic
// = queue. A Reinjector writes it back to queue once the tier has elapsed.
// It returns ErrDelayUnsupported, writing nothing, when no tier covers
// delay. A delay of zero or less is a plain Publish.
func (t *Transport) PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	return t.PublishDelayedWithHeaders(ctx, queue, body, delay, nil)
}

// PublishDelayedWithHeaders implements babelqueue.DelayedHeaderPublisher:
// it is PublishDelayed with the caller's out-of-band headers added after
// the tier headers, as PublishWithHeaders adds them (in key order, blank
// keys and values skipped, a contract header winning a collision, and
// bq-delay and bq-original-topic never taken from the caller). A
// Reinjector keeps them when it writes the record back to queue. A delay of
// zero or less is a plain PublishWithHeaders.
func (t *Transport) PublishDelayedWithHeaders(ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error {
	if babelqueue.IsBlank(queue) {
		return ErrEmptyTopic
	}
	if delay <= 0 {
		return t.PublishWithHeaders(ctx, queue, body, headers)
	}
	n := TierForDelay(delay, t.cfg.tiers)
	if n == 0 {
		return fmt.Errorf("%w: delay %v", ErrDelayUnsupported, delay)
	}
	tier := t.cfg.tiers[n-1]
	hs, _ := projection(body, t.cfg.clock.Now())
	hs.set(babelqueue.HeaderDelay, millis(tier))
	hs.set(babelqueue.HeaderOriginalTopic, queue)
	hs = withExtra(hs, headers)
	topic := RetryTopic(queue, n)
	return t.write(ctx, topic, kafkago.Message{
		Topic:   topic,
		Value:   []byte(body),
		Headers: toKafkaHeaders(hs),
		Time:    t.cfg.clock.Now(),
	})
}

// writeRetry writes the retry copy of from to tier n.
func (t *Transport) writeRetry(ctx context.Context, from *babelqueue.ReceivedMessage, n, attempts int, delay time.Duration) error {
	body := from.Body
	if out, err := babelqueue.SetAttempts([]byte(body), attempts); err == nil {
		body = string(out)
	}
	var key []byte
	var incoming []kafkago.Header
	if d, ok := recordOf(from); ok {
		key, incoming = d.msg.Key, d.msg.Headers
	}
	hs, _ := projection(body, t.cfg.clock.Now())
	hs.set(babelqueue.HeaderAttempts, strconv.Itoa(attempts))
	hs = keepRouting(hs, incoming)
	hs.set(babelqueue.HeaderDelay, millis(delay))
	hs.set(babelqueue.HeaderOriginalTopic, from.Queue)
	hs = forwardContext(hs, from, incoming)
	hs = keepRedriveCount(hs, from, incoming)
	topic := RetryTopic(from.Queue, n)
	return t.write(ctx, topic, kafkago.Message{
		Topic:   topic,
		Key:     key,
		Value:   []byte(body),
		Headers: toKafkaHeaders(hs),
		Time:    t.cfg.clock.Now(),
	})
}

// keepRedriveCount carries the delivery's bq-redrive-count (from
// from.Headers, else the reserved record) onto its retry copy, once, so the
// replay-count guard of a later redrive still knows how often the message
// was redriven.
func keepRedriveCount(s headerSet, from *babelqueue.ReceivedMessage, record []kafkago.Header) headerSet {
	v, ok := from.Header(babelqueue.HeaderRedriveCount)
	if !ok {
		v, ok = lastHeader(record, babelqueue.HeaderRedriveCount)
	}
	if ok && !babelqueue.IsBlank(v) {
		s.setIfAbsent(babelqueue.HeaderRedriveCount, v)
	}
	return s
}

// deliveredAttempts is the reconciled attempts of a delivery: the body's
// count (Pop already synced it with a valid header), else the header's,
// else 0.
func deliveredAttempts(m *babelqueue.ReceivedMessage) int {
	if n, ok := babelqueue.ParseAttemptsHeader(babelqueue.ProjectBody([]byte(m.Body)).Attempts); ok {
		return n
	}
	if v, ok := m.Header(babelqueue.HeaderAttempts); ok {
		if n, ok := babelqueue.ParseAttemptsHeader(v); ok {
			return n
		}
	}
	return 0
}
