package kafka

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// delivery is the Handle of a ReceivedMessage reserved by Pop or Receive:
// the record as fetched and the consumer whose ledger settles it. It is
// allocated together with the ReceivedMessage handed out (newDelivery), so
// a delivery costs one allocation besides its header map.
type delivery struct {
	msg      kafkago.Message
	cons     *consumer                  // set when handed out; nil for a record not read by this transport
	part     *partitionLedger           // the ledger of its partition, set with cons
	rm       babelqueue.ReceivedMessage // the message handed out; its Handle is this delivery
	prepared bool                       // prepare ran: handOut has nothing left to do
	asg      *assignment                // the member assignment it came from; nil for a Reader's record
	size     int64                      // its share of the transport's record budget (member records)
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

// Pop reserves the next record of the topic queue, with its Headers map
// filled; otherwise it is Receive.
func (t *Transport) Pop(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	return t.pop(ctx, queue, timeout, false)
}

// Receive reserves the next record of the topic queue without committing
// it, or returns (nil, nil) when nothing arrived in time. It waits at most
// timeout, capped by WithMaxWaitTime; the record is committed only once
// settled (process-then-commit). The headers are deferred: Header reads the
// record's header list and FillHeaders builds the map, so a record settled
// at once costs no map.
//
// The body carries the attempts of CONTRACT.md 6: a valid bq-attempts header is
// authoritative, and when it differs from the body's attempts only that
// number is rewritten. A record rejected by the version gate is handed over
// untouched, after the OnSchemaVersionRejected hook ran. A group error that
// heals by itself (a coordinator moving, a rebalance, a lost connection)
// counts as an empty poll; one that does not is returned. A queue read from
// the brokers is read by a consumer-group member that fetches each assigned
// partition ahead within the transport's record budget and stops handing out
// a partition's records the moment it is revoked (DESIGN.md, "Group
// member reader" and "Revocation and Close").
func (t *Transport) Receive(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	return t.pop(ctx, queue, timeout, true)
}

// pop is Receive, with the headers filled unless deferHeaders is set.
func (t *Transport) pop(ctx context.Context, queue string, timeout time.Duration, deferHeaders bool) (*babelqueue.ReceivedMessage, error) {
	if wire.IsBlank(queue) {
		return nil, ErrEmptyTopic
	}
	c, fresh, err := t.reader(queue, deferHeaders)
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
			_ = t.dropReader(c)
			return nil, wrapf(err, "fetch from %q", queue)
		}
		if timeout -= time.Since(start); timeout <= 0 {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, nil
		}
	}
	if c.member != nil {
		return t.receiveMember(ctx, c.member, queue, timeout, deferHeaders)
	}
	var d *delivery
	c.fetchMu.Lock()
	fctx := getFetchContext()
	fctx.arm(ctx, timeout)
	m, err := c.r.FetchMessage(fctx.CallContext)
	fctx.disarm()
	putFetchContext(fctx)
	if err == nil {
		d = t.newDelivery(queue, m)
		c.handOut(d)
	}
	c.fetchMu.Unlock()
	if err != nil {
		return nil, t.fetchError(ctx, queue, err)
	}
	rm := t.handOut(queue, d)
	if !deferHeaders {
		rm.FillHeaders()
	}
	return rm, nil
}

// receiveMember is pop for a queue read by a group member.
func (t *Transport) receiveMember(ctx context.Context, m *memberReader, queue string, timeout time.Duration, deferHeaders bool) (*babelqueue.ReceivedMessage, error) {
	// A record already buffered is handed out without arming the wait's
	// deadline.
	d, err := m.tryReceive(deferHeaders)
	if d == nil && err == nil {
		if err = ctx.Err(); err == nil {
			fctx := getFetchContext()
			fctx.arm(ctx, timeout)
			d, err = m.receive(fctx.CallContext, deferHeaders)
			fctx.disarm()
			putFetchContext(fctx)
		}
	}
	if err != nil {
		return nil, t.fetchError(ctx, queue, err)
	}
	rm := t.handOut(queue, d)
	if !deferHeaders {
		rm.FillHeaders()
	}
	return rm, nil
}

// fetchError maps a failed fetch of queue onto Receive's result: nil for
// an empty poll, else the error to return.
func (t *Transport) fetchError(ctx context.Context, queue string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return nil
	case t.isClosed():
		return ErrClosed
	case errors.Is(err, io.EOF), errors.Is(err, errReaderClosed):
		// The reader was closed under us (a concurrent HandBack); the
		// next call opens a fresh one.
		return nil
	case !permanent(err):
		// The group reader keeps retrying (coordinator moving, a
		// rebalance, a lost connection): report it and let the
		// caller poll again.
		t.cfg.log().Warn("kafka: consumer group error; retrying", "queue", queue, "err", err)
		return nil
	}
	return wrapf(err, "fetch from %q", queue)
}

// newDelivery turns a fetched record into its delivery. The body and the
// header values are read-only views of the record's bytes, which a Reader
// hands over and never changes again (kafka-go allocates them per record),
// so nothing is copied. The body is as received: handOut applies the
// version gate and the attempts rule.
func (t *Transport) newDelivery(queue string, m kafkago.Message) *delivery {
	if m.Topic == "" {
		m.Topic = queue
	}
	d := &delivery{msg: m}
	d.rm = babelqueue.ReceivedMessage{
		Body:   bytesView(m.Value),
		Queue:  m.Topic,
		Handle: d,
		// The App orders concurrent handling by these (WithConcurrency).
		Key: m.Key, Partition: int32(m.Partition),
		// Where it was read, for telemetry.
		Offset: m.Offset, Group: t.cfg.groupID,
	}
	if len(m.Headers) > 0 {
		// Built by FillHeaders: by Pop, or ahead by the partition's
		// fetcher; or never, for an App that settles the record at once.
		d.rm.DeferHeaders(d)
	}
	return d
}

// LookupHeader returns the last value of key among the record's headers
// (driver.HeaderSource).
func (d *delivery) LookupHeader(key string) (string, bool) {
	return lastHeader(d.msg.Headers, key)
}

// HeaderMap returns the record's headers as a new map
// (driver.HeaderSource).
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

// prepare does ahead, on a partition's fetcher, what handOut would do
// and, with predecode, what the App would do first: the attempts rule and
// the decoding of the body (babelqueue.ReceivedMessage.Predecode). A
// record that the version gate rejects is left to handOut, which calls the
// OnSchemaVersionRejected hook when Pop hands it out.
func prepare(d *delivery, predecode bool) {
	v, present := lastHeader(d.msg.Headers, wire.HeaderSchemaVersion)
	if wire.CheckSchemaVersionHeader(v, present) != nil {
		return
	}
	d.rm.Body = reconcileBody(d.rm.Body, d.msg.Headers)
	if predecode {
		d.rm.Predecode()
	}
	d.prepared = true
}

// reconcileBody applies CONTRACT.md 6 reconciliation: a valid bq-attempts header wins
// over the body. The body is rewritten only when the count really changes;
// a body that cannot hold the count (poison) is left as received.
func reconcileBody(body string, hs []kafkago.Header) string {
	raw, present := lastHeader(hs, wire.HeaderAttempts)
	if !present {
		return body
	}
	n, ok := wire.ParseAttemptsHeader(raw)
	if !ok {
		return body
	}
	if m, ok := wire.BodyAttempts(body); ok && m == n {
		return body
	}
	out, err := wire.SetAttempts([]byte(body), n)
	if err != nil || string(out) == body {
		return body
	}
	return string(out)
}

// Ack settles the reserved record (process-then-commit, at-least-once).
// Its partition is committed up to the end of the contiguous prefix of
// settled deliveries: at once when that prefix now reaches it, else when
// the earlier deliveries it waits for are acknowledged. With a commit
// interval (WithCommitInterval) the commit is batched and sent with the
// next batch, or when the reader closes or loses the partition; with 0 Ack
// returns once the group coordinator stored it. A record at or after a
// handed-back record of its partition (with a Reader: any record of the
// reader a HandBack closed) cannot be committed any more: Ack reports it,
// and the record will be delivered again.
func (t *Transport) Ack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	d, ok := recordOf(msg)
	if ok && d.asg != nil {
		// A member's delivery: settled while its partition is held, also
		// during Close's settle window (DESIGN.md, "Revocation and Close").
		if err := d.asg.m.ack(d); err != nil {
			return wrapf(err, "commit %s/%d@%d", d.msg.Topic, d.msg.Partition, d.msg.Offset)
		}
		return nil
	}
	if !ok || d.cons == nil {
		return wrapf(babelqueue.ErrInvalidOption, "ack of a message this transport did not reserve")
	}
	if t.isClosed() {
		return ErrClosed
	}
	if err := d.cons.ack(ctx, d); err != nil {
		return wrapf(err, "commit %s/%d@%d", d.msg.Topic, d.msg.Partition, d.msg.Offset)
	}
	return nil
}

// HandBack returns the reserved record unsettled by rewinding the consumer
// of its topic, as Rewind does.
func (t *Transport) HandBack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	return t.Rewind(ctx, msg)
}

// Rewind puts the consumer of the reserved record's topic back at that
// record without committing it, so that no later commit can pass it. A
// queue read from the brokers re-reads the record's partition from it:
// the records of the partition handed out before it still settle and
// count, those after it are delivered again and their Acks fail
// (DESIGN.md, "Group member reader"). A Reader (WithReaderFactory) cannot seek, so it is
// closed (flushing the commits of the settled prefix, which ends before
// this record) and dropped; the next Pop opens a new one, which resumes
// from the group's committed offset, this record included. Every other
// record it handed out and not yet committed is delivered again too, and
// its Ack fails.
func (t *Transport) Rewind(_ context.Context, msg *babelqueue.ReceivedMessage) error {
	d, ok := recordOf(msg)
	if ok && d.asg != nil {
		return d.asg.m.rewind(d)
	}
	if !ok || d.cons == nil {
		return wrapf(babelqueue.ErrInvalidOption, "rewind of a message this transport did not reserve")
	}
	d.cons.rewind()
	if err := t.dropReader(d.cons); err != nil {
		return wrapf(err, "rewind %s/%d@%d", d.msg.Topic, d.msg.Partition, d.msg.Offset)
	}
	return nil
}

// fetchContext is the context of the FetchMessage call of one Pop: a
// driver.CallContext that follows the caller's context and ends at the
// poll deadline, like context.WithTimeout, re-armed from a small free list
// instead of allocating a context, a timer and a cancellation registration
// on the caller's context for every Pop (a consume loop passes the same
// context Pop after Pop, so the registration is made once).
type fetchContext struct {
	*driver.CallContext
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
	return fetchContext{driver.NewCallContext(false)}
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
