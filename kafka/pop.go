package kafka

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
	"unsafe"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	kafkago "github.com/segmentio/kafka-go"
)

// delivery is the Handle of a ReceivedMessage reserved by Pop: the record as
// fetched and the reader that must commit it. It is allocated together with
// the ReceivedMessage Pop hands out (newDelivery), so a delivery costs one
// allocation besides its header map.
type delivery struct {
	msg      kafkago.Message
	reader   Reader
	rm       babelqueue.ReceivedMessage // the message Pop returned; its Handle is this delivery
	prepared bool                       // prepare ran: handOut has nothing left to do
}

// recordOf returns the Kafka record behind msg, when this transport
// reserved it.
func recordOf(msg *babelqueue.ReceivedMessage) (*delivery, bool) {
	if msg == nil {
		return nil, false
	}
	d, ok := msg.Handle.(*delivery)
	return d, ok && d != nil
}

// Pop reserves the next record of the topic queue: it fetches without
// committing (process-then-commit), waiting at most timeout, capped by
// WithMaxWaitTime, and returns (nil, nil) when nothing arrived in time. The
// group readers the transport builds are read ahead by a goroutine into a
// bounded buffer (see prefetchReader); what it buffered and Pop has not
// returned is dropped uncommitted when the reader closes.
//
// The delivered body carries the attempts of §6: a valid bq-attempts header
// is authoritative, so when it differs from the body's attempts only that
// number is rewritten (SetAttempts); otherwise the bytes are handed over as
// received. The attempts rule never decodes the body; a read-ahead record
// has its body decoded once, for the App, before Pop returns it
// (babelqueue.ReceivedMessage.Predecode). A record rejected by the
// version gate (a bq-schema-version header that is present, not blank and
// not 1) is handed over untouched for the App to dead-letter, after the
// OnSchemaVersionRejected hook ran. A group error that heals by itself (a
// coordinator moving, a rebalance, a lost connection) is logged and counts
// as an empty poll; one that does not (authentication, authorization, an
// invalid group id) is returned.
func (t *Transport) Pop(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	return t.pop(ctx, queue, timeout, false)
}

// PopDeferredHeaders is Pop, except that the returned message's Headers
// map is not built: Header reads the record's header list, and
// FillHeaders builds the map when the caller needs it
// (babelqueue.DeferredHeaderPopper). The App pops through it, so a record
// its handler settles at once costs no map.
func (t *Transport) PopDeferredHeaders(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	return t.pop(ctx, queue, timeout, true)
}

// pop is Pop, with the headers deferred when deferHeaders is set.
func (t *Transport) pop(ctx context.Context, queue string, timeout time.Duration, deferHeaders bool) (*babelqueue.ReceivedMessage, error) {
	if babelqueue.IsBlank(queue) {
		return nil, ErrEmptyTopic
	}
	r, fresh, err := t.reader(queue)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 || timeout > t.cfg.maxWait {
		timeout = t.cfg.maxWait
	}
	if fresh {
		// The check of the connection settings counts within timeout.
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := t.checkConnection(cctx)
		cancel()
		if err != nil {
			_ = t.dropReader(queue, r)
			return nil, wrapf(err, "fetch from %q", queue)
		}
		if timeout -= time.Since(start); timeout <= 0 {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, nil
		}
	}
	var f fetched
	if p, ok := r.(*prefetchReader); ok {
		p.begin(deferHeaders)
		var got bool
		if f, got = p.take(); !got {
			fctx := getFetchContext()
			fctx.arm(ctx, timeout)
			f, err = p.fetch(fctx.CallContext)
			fctx.disarm()
			putFetchContext(fctx)
		}
	} else {
		fctx := getFetchContext()
		fctx.arm(ctx, timeout)
		var m kafkago.Message
		m, err = r.FetchMessage(fctx.CallContext)
		fctx.disarm()
		putFetchContext(fctx)
		if err == nil {
			f.d = t.newDelivery(queue, m, r)
		}
	}
	if err == nil {
		err = f.err
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return nil, nil
		case t.isClosed():
			return nil, ErrClosed
		case errors.Is(err, io.EOF):
			// The reader was closed under us (a concurrent Rewind); the
			// next Pop opens a fresh one.
			return nil, nil
		case !permanent(err):
			// The group reader keeps retrying (coordinator moving, a
			// rebalance, a lost connection): report it and let the
			// caller poll again.
			t.cfg.log().Warn("kafka: consumer group error; retrying", "queue", queue, "err", err)
			return nil, nil
		}
		return nil, wrapf(err, "fetch from %q", queue)
	}
	m := t.handOut(queue, f.d)
	if !deferHeaders {
		m.FillHeaders()
	}
	return m, nil
}

// newDelivery turns a fetched record into its delivery. The body and the
// header values are read-only views of the record's bytes, which a Reader
// hands over and never changes again (kafka-go allocates them per record),
// so nothing is copied. The body is as received: handOut applies the
// version gate and the attempts rule.
func (t *Transport) newDelivery(queue string, m kafkago.Message, r Reader) *delivery {
	if m.Topic == "" {
		m.Topic = queue
	}
	d := &delivery{msg: m, reader: r}
	d.rm = babelqueue.ReceivedMessage{
		Body:   bytesView(m.Value),
		Queue:  m.Topic,
		Handle: d,
	}
	if len(m.Headers) > 0 {
		// Built by FillHeaders: by Pop, or ahead by the prefetching
		// goroutine; or never, for an App that settles the record at once.
		d.rm.DeferHeaders(d)
	}
	return d
}

// LookupHeader returns the last value of key among the record's headers
// (babelqueue.HeaderSource).
func (d *delivery) LookupHeader(key string) (string, bool) {
	return lastHeader(d.msg.Headers, key)
}

// HeaderMap returns the record's headers as a new map
// (babelqueue.HeaderSource).
func (d *delivery) HeaderMap() map[string]string {
	return headerMap(d.msg.Headers)
}

// handOut applies the version gate and the attempts rule to a delivery
// Pop is about to return, and returns its ReceivedMessage.
func (t *Transport) handOut(queue string, d *delivery) *babelqueue.ReceivedMessage {
	if d.prepared {
		return &d.rm
	}
	if _, gated := t.versionGate(queue, d.msg.Headers); !gated {
		d.rm.Body = reconcileBody(d.rm.Body, d.msg.Headers)
	}
	return &d.rm
}

// prepare does ahead, on a prefetching goroutine, what handOut would do
// and, with predecode, what the App would do first: the attempts rule and
// the decoding of the body (babelqueue.ReceivedMessage.Predecode). A
// record that the version gate rejects is left to handOut, which calls the
// OnSchemaVersionRejected hook when Pop hands it out.
func prepare(d *delivery, predecode bool) {
	v, present := lastHeader(d.msg.Headers, babelqueue.HeaderSchemaVersion)
	if babelqueue.CheckSchemaVersionHeader(v, present) != nil {
		return
	}
	d.rm.Body = reconcileBody(d.rm.Body, d.msg.Headers)
	if predecode {
		d.rm.Predecode()
	}
	d.prepared = true
}

// reconcileBody applies §6 reconciliation: a valid bq-attempts header wins
// over the body. The body is rewritten only when the count really changes;
// a body that cannot hold the count (poison) is left as received.
func reconcileBody(body string, hs []kafkago.Header) string {
	raw, present := lastHeader(hs, babelqueue.HeaderAttempts)
	if !present {
		return body
	}
	n, ok := babelqueue.ParseAttemptsHeader(raw)
	if !ok {
		return body
	}
	if endsWithAttempts(body, n) {
		return body
	}
	out, err := babelqueue.SetAttempts([]byte(body), n)
	if err != nil || string(out) == body {
		return body
	}
	return string(out)
}

// Ack commits the reserved record (process-then-commit, at-least-once).
// With a commit interval (WithCommitInterval) the commit is queued and sent
// with the next batch, or when the reader closes or loses the partition;
// with 0 Ack returns once the group coordinator stored it. Acks of one queue
// come in delivery order, so commits never move backwards. A record whose
// reader was dropped by Rewind cannot be committed any more: Ack reports it,
// and the record will be delivered again.
func (t *Transport) Ack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	d, ok := recordOf(msg)
	if !ok {
		return wrapf(babelqueue.ErrInvalidOption, "ack of a message this transport did not reserve")
	}
	if t.isClosed() {
		return ErrClosed
	}
	// The record itself is the one-element list CommitMessages reads (it
	// keeps only topic, partition and offset): no copy, no allocation.
	if err := d.reader.CommitMessages(ctx, unsafe.Slice(&d.msg, 1)...); err != nil {
		if errors.Is(err, io.ErrClosedPipe) {
			return wrapf(err, "commit %s/%d@%d: the reader was rewound or closed; the record will be delivered again", d.msg.Topic, d.msg.Partition, d.msg.Offset)
		}
		return wrapf(err, "commit %s/%d@%d", d.msg.Topic, d.msg.Partition, d.msg.Offset)
	}
	return nil
}

// Rewind puts the consumer of the reserved record's topic back at that
// record without committing it, so that no later commit can pass it. A
// kafka-go group reader cannot seek, so the reader is closed (flushing the
// commits of records acknowledged before this one) and dropped; the next
// Pop opens a new one, which resumes from the group's committed offset,
// this record included. Other records fetched but not acknowledged are
// delivered again too.
func (t *Transport) Rewind(_ context.Context, msg *babelqueue.ReceivedMessage) error {
	d, ok := recordOf(msg)
	if !ok {
		return wrapf(babelqueue.ErrInvalidOption, "rewind of a message this transport did not reserve")
	}
	if err := t.dropReader(msg.Queue, d.reader); err != nil {
		return wrapf(err, "rewind %s/%d@%d", d.msg.Topic, d.msg.Partition, d.msg.Offset)
	}
	return nil
}

// endsWithAttempts reports whether body ends with the member
// ,"attempts":n of its top-level object, as every SDK writes it. It is a
// fast path that saves a scan of the body in the common case where the
// header and the body agree: in valid JSON a final `,"attempts":n}` can
// only be the last top-level member (the one a reader keeps), and a body
// that is not valid JSON is left as received either way.
func endsWithAttempts(body string, n int) bool {
	i := len(body) - 1
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	if i < 0 || body[i] != '}' {
		return false
	}
	i--
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	digits := strconv.Itoa(n)
	if i+1 < len(digits) || body[i+1-len(digits):i+1] != digits {
		return false
	}
	i -= len(digits)
	if i >= 0 && body[i] >= '0' && body[i] <= '9' {
		return false // more digits: another number
	}
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	if i < 0 || body[i] != ':' {
		return false
	}
	i--
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	const key = `"attempts"`
	if i+1 < len(key) || body[i+1-len(key):i+1] != key {
		return false
	}
	i -= len(key)
	for i >= 0 && isSpace(body[i]) {
		i--
	}
	return i >= 0 && body[i] == ','
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// fetchContext is the context of the FetchMessage call of one Pop: a
// babelqueue.CallContext that follows the caller's context and ends at the
// poll deadline, like context.WithTimeout, re-armed from a small free list
// instead of allocating a context, a timer and a cancellation registration
// on the caller's context for every Pop (a consume loop passes the same
// context Pop after Pop, so the registration is made once).
type fetchContext struct {
	*babelqueue.CallContext
}

func (c fetchContext) arm(parent context.Context, d time.Duration) { c.Arm(parent, d) }
func (c fetchContext) disarm()                                     { c.Disarm() }

// fetchContexts is the free list of fetchContexts. It is bounded: one
// beyond the bound is released (its registration ended) and dropped.
var fetchContexts struct {
	mu   sync.Mutex
	free []fetchContext
}

const maxFreeFetchContexts = 16

func getFetchContext() fetchContext {
	fetchContexts.mu.Lock()
	if n := len(fetchContexts.free); n > 0 {
		c := fetchContexts.free[n-1]
		fetchContexts.free = fetchContexts.free[:n-1]
		fetchContexts.mu.Unlock()
		return c
	}
	fetchContexts.mu.Unlock()
	return fetchContext{babelqueue.NewCallContext(false)}
}

func putFetchContext(c fetchContext) {
	fetchContexts.mu.Lock()
	if len(fetchContexts.free) < maxFreeFetchContexts {
		fetchContexts.free = append(fetchContexts.free, c)
		fetchContexts.mu.Unlock()
		return
	}
	fetchContexts.mu.Unlock()
	c.Release()
}
