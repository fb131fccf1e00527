package kafka

import (
	"context"
	"fmt"
	"sort"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Features reports keys and headers always, a delayed publish when retry
// tiers are configured, and hand-back by rewind. Tiers are configured with
// WithRetryTiers. A retry is a write like any other; the App settles the
// original afterwards. Ack is non-blocking when the queues are read by
// group members with a commit interval: it only marks the delivery settled
// (the commit loop commits), so the App calls it without a settle deadline.
func (t *Transport) Features() driver.Features {
	return driver.Features{
		Keys:           true,
		Headers:        true,
		Delay:          len(t.cfg.tiers) > 0,
		HandBack:       driver.HandBackRewind,
		AckNonBlocking: t.cfg.readerFactory == nil && t.cfg.commitInterval > 0,
	}
}

// Send writes out as its Intent says (babelqueue.Transport) and returns once
// the broker acknowledged the record. The value is out.Body byte for byte
// (a restore keeps a null value); the key is out.Key, else the key of
// out.From. Every intent but IntentForward and IntentRestore projects the
// CONTRACT.md 6 headers from the body and adds out.Headers in key order (blanks
// skipped, a contract header winning; Retry, Release and DeadLetter keep
// the bq-job of out.Headers). A delayed publish and a retry with tiers go
// to a retry tier topic with bq-delay and bq-original-topic, which the
// Receipt names with the tier's delay; a delay no tier covers fails with
// ErrDelayUnsupported, writing nothing. DESIGN.md, "What each intent
// writes", lists what each intent writes.
func (t *Transport) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	r := driver.Receipt{Partition: -1}
	if out == nil {
		return r, wrapf(babelqueue.ErrInvalidOption, "send of a nil message")
	}
	if wire.IsBlank(out.Queue) {
		return r, ErrEmptyTopic
	}
	switch out.Intent {
	case driver.IntentPublish:
		if out.Delay > 0 {
			return t.sendDelayed(ctx, out)
		}
		return r, t.write(ctx, out.Queue, t.publishRecord(out))
	case driver.IntentRetry:
		if len(t.cfg.tiers) > 0 {
			n := TierForAttempt(out.Attempt, len(t.cfg.tiers))
			return t.sendTier(ctx, out, n, t.cfg.tiers[n-1])
		}
		return r, t.write(ctx, out.Queue, t.republished(out, false))
	case driver.IntentRelease, driver.IntentDeadLetter, driver.IntentRedrive:
		return r, t.write(ctx, out.Queue, t.republished(out, false))
	case driver.IntentForward:
		return r, t.write(ctx, out.Queue, t.forwarded(out))
	case driver.IntentRestore:
		return r, t.write(ctx, out.Queue, t.restored(out, false))
	default:
		return r, wrapf(babelqueue.ErrInvalidOption, "send to %q: unknown intent %v", out.Queue, out.Intent)
	}
}

// keyOf is the key a write of out carries: out.Key, else the key of the
// reserved record out.From (nil for none, or for a message this transport
// did not reserve).
func keyOf(out *driver.Outgoing) []byte {
	if out.Key != nil {
		return out.Key
	}
	if d, ok := recordOf(out.From); ok {
		return d.msg.Key
	}
	return nil
}

// keepRoute makes the bq-job of out.Headers the route of hs when the
// intent keeps the delivered route (driver.Intent.KeepsRoute).
func keepRoute(hs headerSet, out *driver.Outgoing) headerSet {
	if out.Intent.KeepsRoute() {
		if job, ok := out.Headers[wire.HeaderJob]; ok && !wire.IsBlank(job) {
			hs.set(wire.HeaderJob, job)
		}
	}
	return hs
}

// republished builds a republish of out: the projection of the body (the
// route kept when the intent keeps it), out.Headers beside it, the
// created_at timestamp and the key of out. With keepRecordJob, the reserved
// record's bq-job is kept for a body that projects none (PublishFrom's
// rule).
func (t *Transport) republished(out *driver.Outgoing, keepRecordJob bool) kafkago.Message {
	hs, ts := projection(out.Body, t.cfg.clock.Now())
	hs = keepRoute(hs, out)
	if keepRecordJob {
		if d, ok := recordOf(out.From); ok {
			hs = keepRouting(hs, d.msg.Headers)
		}
	}
	hs = withExtra(hs, out.Headers)
	return kafkago.Message{Topic: out.Queue, Key: keyOf(out), Value: []byte(out.Body), Headers: toKafkaHeaders(hs), Time: ts}
}

// sendDelayed writes a delayed publish to the smallest tier that covers
// out.Delay.
func (t *Transport) sendDelayed(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	m, r, err := t.delayedRecord(out)
	if err != nil {
		return driver.Receipt{Partition: -1}, err
	}
	if err := t.write(ctx, m.Topic, m); err != nil {
		return driver.Receipt{Partition: -1}, err
	}
	return r, nil
}

// delayedRecord builds the record of a delayed publish, to the smallest
// tier that covers out.Delay, and the receipt naming it.
func (t *Transport) delayedRecord(out *driver.Outgoing) (kafkago.Message, driver.Receipt, error) {
	n := tierForDelay(out.Delay, t.cfg.tiers)
	if n == 0 {
		return kafkago.Message{}, driver.Receipt{Partition: -1}, fmt.Errorf("%w: delay %v", ErrDelayUnsupported, out.Delay)
	}
	tier := t.cfg.tiers[n-1]
	hs, _ := projection(out.Body, t.cfg.clock.Now())
	hs.set(wire.HeaderDelay, millis(tier))
	hs.set(wire.HeaderOriginalTopic, out.Queue)
	hs = withExtra(hs, out.Headers)
	topic := RetryTopic(out.Queue, n)
	m := kafkago.Message{Topic: topic, Key: out.Key, Value: []byte(out.Body), Headers: toKafkaHeaders(hs), Time: t.cfg.clock.Now()}
	return m, driver.Receipt{Partition: -1, Queue: topic, Delay: tier}, nil
}

// sendTier writes the retry copy out to tier n, with bq-delay = delay and
// bq-original-topic = out.Queue, stamped with the publish time from which
// the Reinjector counts the tier.
func (t *Transport) sendTier(ctx context.Context, out *driver.Outgoing, n int, delay time.Duration) (driver.Receipt, error) {
	m, r := t.tierRecord(out, n, delay)
	if err := t.write(ctx, m.Topic, m); err != nil {
		return driver.Receipt{Partition: -1}, err
	}
	return r, nil
}

// tierRecord builds the record of sendTier and the receipt naming its tier.
func (t *Transport) tierRecord(out *driver.Outgoing, n int, delay time.Duration) (kafkago.Message, driver.Receipt) {
	hs, _ := projection(out.Body, t.cfg.clock.Now())
	hs = keepRoute(hs, out)
	hs.set(wire.HeaderDelay, millis(delay))
	hs.set(wire.HeaderOriginalTopic, out.Queue)
	hs = withExtra(hs, out.Headers)
	topic := RetryTopic(out.Queue, n)
	m := kafkago.Message{Topic: topic, Key: keyOf(out), Value: []byte(out.Body), Headers: toKafkaHeaders(hs), Time: t.cfg.clock.Now()}
	return m, driver.Receipt{Partition: -1, Queue: topic, Delay: delay}
}

// forwarded builds a verbatim write of out: body and headers exactly as
// given (blank keys skipped, in key order), the key of out, the publish
// time. When body and headers are those of the reserved record, its
// headers keep their original order.
func (t *Transport) forwarded(out *driver.Outgoing) kafkago.Message {
	key := keyOf(out)
	if d, ok := recordOf(out.From); ok && out.Body == string(d.msg.Value) && sameHeaders(d.msg.Headers, out.Headers) {
		return kafkago.Message{Topic: out.Queue, Key: key, Value: d.msg.Value,
			Headers: append([]kafkago.Header(nil), d.msg.Headers...), Time: t.cfg.clock.Now()}
	}
	return kafkago.Message{Topic: out.Queue, Key: key, Value: []byte(out.Body), Headers: sortedHeaders(out.Headers), Time: t.cfg.clock.Now()}
}

// restored builds the write back of the reserved record out.From: its
// value when out.Body is its body (a null value stays null), its headers in
// order when out.Headers are its headers (or, with recordHeaders, always),
// else what out gives verbatim; the key of out; the publish time, so the
// copy does not age out of its topic early.
func (t *Transport) restored(out *driver.Outgoing, recordHeaders bool) kafkago.Message {
	d, ok := recordOf(out.From)
	if !ok {
		return t.forwarded(out)
	}
	m := kafkago.Message{Topic: out.Queue, Key: keyOf(out), Value: []byte(out.Body), Time: t.cfg.clock.Now()}
	if out.Body == out.From.Body || out.Body == string(d.msg.Value) {
		m.Value = d.msg.Value
	}
	if recordHeaders || sameHeaders(d.msg.Headers, out.Headers) {
		m.Headers = append([]kafkago.Header(nil), d.msg.Headers...)
	} else {
		m.Headers = sortedHeaders(out.Headers)
	}
	return m
}

// sortedHeaders returns headers as record headers in key order, blank keys
// skipped.
func sortedHeaders(headers map[string]string) []kafkago.Header {
	keys := make([]string, 0, len(headers))
	for k := range headers {
		if !wire.IsBlank(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	hs := make([]kafkago.Header, len(keys))
	for i, k := range keys {
		hs[i] = kafkago.Header{Key: k, Value: []byte(headers[k])}
	}
	return hs
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

// singlesBatchSize caps the batches of concurrent single-record writes
// (below WithBatchSize when that is larger). Such a batch holds about one
// record per concurrent publisher, and kafka-go allocates (and zeroes) a
// batch's record slice for its full cap when it opens it: at 1,000 records
// that is some 200 KB per produce request, the largest share of the CPU a
// concurrent publish costs. A SendBatch of up to fewBatchSize records
// has its own capped writer (send_batch.go); writes of more keep the
// configured cap.
const singlesBatchSize = 128

// write hands msgs to the writer and maps its errors (publish_outcome.go).
// A single record written while no other write is in flight goes through
// the lone writer, which sends it at once: the batching writer would hold
// it for the linger (WithLinger) waiting for records that only concurrent
// writes bring. A single record written beside others goes through the
// writer whose batches are capped at singlesBatchSize.
func (t *Transport) write(ctx context.Context, topic string, msgs ...kafkago.Message) error {
	if t.isClosed() {
		return ErrClosed
	}
	w := t.writer
	if t.loneWriter != nil {
		switch {
		case t.writing.Add(1) == 1 && len(msgs) == 1:
			w = t.loneWriter
		case len(msgs) == 1:
			w = t.manyWriter
		}
		defer t.writing.Add(-1)
	}
	return t.writeClassified(ctx, w, topic, msgs...)
}
