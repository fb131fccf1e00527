package pulsar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// delivery is the Handle of a ReceivedMessage returned by Pop. The
// ReceivedMessage lives inside it, so that a delivery is one allocation.
type delivery struct {
	rm       babelqueue.ReceivedMessage
	msg      pulsar.Message
	consumer consumer
	topic    string
}

// messageChan is the part of pulsar.Consumer Pop uses to take a message
// that is already waiting without arming a timer for it.
type messageChan interface {
	Chan() <-chan pulsar.ConsumerMessage
}

// Message returns the pulsar.Message behind a ReceivedMessage returned by
// Pop, or nil when msg did not come from this binding. The ReceivedMessage
// shares the message's payload bytes (its Body, unless the attempts rule
// rewrote it), its property map (its Headers) and its key bytes (its Key):
// the caller must not modify any of them.
func Message(msg *babelqueue.ReceivedMessage) pulsar.Message {
	if d := deliveryOf(msg); d != nil {
		return d.msg
	}
	return nil
}

func deliveryOf(msg *babelqueue.ReceivedMessage) *delivery {
	if msg == nil {
		return nil
	}
	d, _ := msg.Handle.(*delivery)
	return d
}

// Receive is Pop: the App's receive of the babelqueue.Transport contract.
// The headers are the message's properties, never deferred.
func (t *Transport) Receive(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	return t.Pop(ctx, queue, timeout)
}

// Pop receives the next message of queue, or returns (nil, nil) when
// nothing arrived within timeout. It subscribes on the first call for that
// queue; a timeout of zero or less means the max wait of WithMaxWaitTime.
//
// Headers holds every property of the message. Body is the payload with the
// CONTRACT.md 5 attempts rule applied: the valid bq-attempts property when
// present, else the body's attempts, and at least the redelivery count; the
// body is rewritten, changing only that value, when it holds an integer
// attempts that differs. A version-gated message (its bq-schema-version
// property, or its meta.schema_version, is not 1) is returned exactly as
// received. See DESIGN.md, "Attempts on receipt", for how the body is read.
// With a pulsar-client-go consumer, Pop takes the next message from the
// client's receive channel itself, until the App's concurrent loop asks for
// ready announcements (NotifyReady): from then on a goroutine per receive
// channel prepares messages ahead of Pop, each partition's in order, and
// decodes their bodies for the App (prefetch.go); they stay unsettled
// until acknowledged. A consumer per partition (a Failover or Exclusive
// subscription of a partitioned topic) prefetches from the start.
func (t *Transport) Pop(ctx context.Context, queue string, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	s, err := t.consumerFor(queue)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.pre != nil {
		return t.popPrepared(ctx, s, timeout)
	}
	// A message already in the client's receive queue is taken as is; the
	// timed wait, and its context, are only for an empty queue.
	if mc, ok := s.c.(messageChan); ok {
		select {
		case cm, open := <-mc.Chan():
			if open && cm.Message != nil {
				rm, _ := received(queue, s, cm.Message, t.cfg.subscription)
				return rm, nil
			}
		default:
		}
	}
	if timeout <= 0 {
		timeout = t.cfg.maxWait
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	m, err := s.c.Receive(rctx)
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			return nil, nil
		case t.isClosed():
			return nil, errClosed("receive from " + s.topic)
		}
		return nil, fmt.Errorf("pulsar: receive from %s: %w", s.topic, err)
	}
	rm, _ := received(queue, s, m, t.cfg.subscription)
	return rm, nil
}

// popPrepared is Pop from the prefetcher of s: a prepared delivery when one
// is ready, else the timed wait for one.
func (t *Transport) popPrepared(ctx context.Context, s *consumerSlot, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	if !s.pre.running.Load() {
		s.pre.mode.RLock()
		if !s.pre.running.Load() {
			rm, err := t.popDirect(ctx, s, timeout)
			s.pre.mode.RUnlock()
			return rm, err
		}
		s.pre.mode.RUnlock()
	}
	if rm, ok := s.pre.take(); ok {
		return rm, nil
	}
	if timeout <= 0 {
		timeout = t.cfg.maxWait
	}
	timer := waitTimer(timeout)
	defer releaseWaitTimer(timer)
wait:
	for {
		// An avail token may be left from deliveries another Pop took
		// meanwhile: the take after it then finds none, and the wait goes
		// on.
		s.pre.waiting.Add(1)
		select {
		case <-s.pre.avail:
			s.pre.waiting.Add(-1)
			if rm, ok := s.pre.take(); ok {
				return rm, nil
			}
		case <-timer.C:
			s.pre.waiting.Add(-1)
			return nil, nil
		case <-ctx.Done():
			s.pre.waiting.Add(-1)
			return nil, ctx.Err()
		case <-s.pre.done:
			s.pre.waiting.Add(-1)
			break wait
		}
	}
	// The prefetcher ended: halted by Close, or the client closed its
	// receive channel. What it prepared before is still handed out, unless
	// the Transport is closed.
	if t.isClosed() {
		return nil, errClosed("receive from " + s.topic)
	}
	if rm, ok := s.pre.take(); ok {
		return rm, nil
	}
	return nil, fmt.Errorf("pulsar: receive from %s: consumer closed", s.topic)
}

// popDirect is Pop from the client's receive channel on the caller's
// goroutine, for a prefetcher in direct mode (s.pre.mode read-locked): a
// message already waiting is taken without a timer; else the timed wait,
// which Close ends (ErrClosed).
func (t *Transport) popDirect(ctx context.Context, s *consumerSlot, timeout time.Duration) (*babelqueue.ReceivedMessage, error) {
	p := s.pre
	// take turns what the channel gave into Pop's result; done is false
	// for an empty consumer message, which Pop passes over.
	take := func(cm pulsar.ConsumerMessage, open bool) (rm *babelqueue.ReceivedMessage, done bool, err error) {
		rm, closed := p.fromChannel(cm, open)
		if closed {
			return nil, true, t.receiveEnded(s)
		}
		return rm, rm != nil, nil
	}
	select {
	case cm, open := <-p.in:
		if rm, done, err := take(cm, open); done {
			return rm, err
		}
	default:
	}
	if timeout <= 0 {
		timeout = t.cfg.maxWait
	}
	timer := waitTimer(timeout)
	defer releaseWaitTimer(timer)
	for {
		select {
		case cm, open := <-p.in:
			if rm, done, err := take(cm, open); done {
				return rm, err
			}
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.stop:
			return nil, errClosed("receive from " + s.topic)
		}
	}
}

// receiveEnded is the error of a Pop that found the client's receive
// channel closed.
func (t *Transport) receiveEnded(s *consumerSlot) error {
	if t.isClosed() {
		return errClosed("receive from " + s.topic)
	}
	return fmt.Errorf("pulsar: receive from %s: consumer closed", s.topic)
}

// waitTimers holds stopped timers for the timed waits of popPrepared and
// popDirect: with a consume loop that outpaces the client, about a third
// of the Pops wait (no-op handler, 64 at once; estimated from the timers
// they made), and a timer made for each cost an allocation and its setup
// every time.
var waitTimers sync.Pool

// waitTimer returns a running timer that fires after d.
func waitTimer(d time.Duration) *time.Timer {
	if tm, _ := waitTimers.Get().(*time.Timer); tm != nil {
		tm.Reset(d)
		return tm
	}
	return time.NewTimer(d)
}

// releaseWaitTimer stops tm and keeps it for a later wait. A value the
// timer sent and nobody received is drained first (only possible with the
// pre-Go 1.23 timer channels, GODEBUG asynctimerchan=1), so that a later
// wait never sees it.
func releaseWaitTimer(tm *time.Timer) {
	if !tm.Stop() {
		select {
		case <-tm.C:
		default:
		}
	}
	waitTimers.Put(tm)
}

// received turns m into a ReceivedMessage with the attempts rule applied.
// Nothing of m is copied: Headers is m's own property map, and Body reads
// m's payload bytes in place (or the rewritten copy the attempts rule
// made). pulsar-client-go gives every received frame a buffer of its own
// that it never reuses, and neither the binding nor the App writes to the
// map or the bytes; a handler must not either (see Message).
// group is the subscription, reported as the delivery's Group. admitted
// reports whether the version gate let the message through by its
// bq-schema-version property (absent or 1).
func received(queue string, s *consumerSlot, m pulsar.Message, group string) (rm *babelqueue.ReceivedMessage, admitted bool) {
	return receivedFrom(queue, s.c, s.topic, -1, m, group)
}

// receivedFrom is received for a message that consumer c received from
// topic (the queue's topic, partitioned or not): the delivery is
// acknowledged through c, and its partition is part, or the one of the
// message ID when part is negative (a consumer of one partition's topic
// reports partition 0 there).
func receivedFrom(queue string, c consumer, topic string, part int32, m pulsar.Message, group string) (rm *babelqueue.ReceivedMessage, admitted bool) {
	payload := m.Payload()
	headers := m.Properties()
	sv, present := headers[wire.HeaderSchemaVersion]
	admitted = wire.CheckSchemaVersionHeader(sv, present) == nil
	if admitted {
		payload = reconcileBody(payload, headers, int(m.RedeliveryCount()))
	}
	// Field by field into the new (zeroed) delivery: a struct literal
	// assigned to d.rm is copied with a bulk write barrier over the whole
	// ReceivedMessage whenever the GC is marking (17% of the CPU of a
	// benchmark of received alone; about 50 ns a message less).
	d := &delivery{msg: m, consumer: c, topic: topic}
	rm = &d.rm
	rm.Body = bytesView(payload)
	rm.Queue = queue
	rm.Headers = headers
	rm.Handle = d
	rm.Group = group
	rm.Key, rm.Partition = orderOf(m)
	if part >= 0 {
		rm.Partition = part
	}
	return rm, admitted
}

// bytesView returns b as a string without copying it; b must never be
// modified afterwards.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// reconcileBody applies the CONTRACT.md 5 attempts rule to payload.
func reconcileBody(payload []byte, headers map[string]string, redelivery int) []byte {
	prop, present := headers[wire.HeaderAttempts]
	if redelivery <= 0 {
		if _, valid := wire.ParseAttemptsHeader(prop); !present || !valid {
			// The body's own attempts stand: nothing to rewrite, and no
			// need to read them.
			return payload
		}
	}
	bodyAttempts, ok := wire.BodyAttempts(payload)
	if !ok {
		return payload
	}
	n := wire.ReconcilePulsar(bodyAttempts, prop, present, redelivery)
	if n == bodyAttempts {
		return payload
	}
	if class, _ := wire.ClassifyBody(payload); class == wire.ClassUnsupportedVersion {
		// Version-gated by its body: it is moved to its dead-letter
		// queue exactly as received.
		return payload
	}
	out, err := wire.SetAttempts(payload, n)
	if err != nil {
		return payload
	}
	return out
}

// Ack acknowledges msg: it will not be delivered again. Pulsar
// acknowledges each message on its own, so deliveries may be acknowledged,
// and handed back, in any order and from several goroutines.
func (t *Transport) Ack(_ context.Context, msg *babelqueue.ReceivedMessage) error {
	d := deliveryOf(msg)
	if d == nil {
		return fmt.Errorf("pulsar: ack: %w: message was not received from this binding", babelqueue.ErrInvalidOption)
	}
	if t.isClosed() {
		return errClosed("ack")
	}
	if err := d.consumer.Ack(d.msg); err != nil {
		return fmt.Errorf("pulsar: ack on %s: %w", d.topic, err)
	}
	return nil
}

// HandBack negatively acknowledges msg (Nack): the contract's hand-back,
// driver.HandBackNack.
func (t *Transport) HandBack(ctx context.Context, msg *babelqueue.ReceivedMessage) error {
	return t.Nack(ctx, msg)
}

// Nack negatively acknowledges msg: the broker delivers it again after the
// nack redelivery delay, with a higher redelivery count on Shared and
// KeyShared subscriptions.
func (t *Transport) Nack(_ context.Context, msg *babelqueue.ReceivedMessage) error {
	d := deliveryOf(msg)
	if d == nil {
		return fmt.Errorf("pulsar: nack: %w: message was not received from this binding", babelqueue.ErrInvalidOption)
	}
	if t.isClosed() {
		return errClosed("nack")
	}
	d.consumer.Nack(d.msg)
	return nil
}
