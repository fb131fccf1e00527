package kafkashare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// queue is one member of a topic's share consumption (queueSet): one
// franz-go client and the poller goroutine (run) that acquires its records.
//
// franz-go accepts every record of a poll that was not acknowledged by
// the next poll, so a member polls again only once every record of its
// previous poll is settled (held is empty): the poll barrier. A record is
// therefore never accepted unhandled, and a redelivery of a record cannot
// reach this member while it still holds that record.
type queue struct {
	t    *Transport
	set  *queueSet
	name string
	cl   *kgo.Client
	kick chan struct{} // wakes run: held emptied, or a Receive asks (buffer 1)

	mu     sync.Mutex
	buf    []*held            // acquired, not yet handed out
	polled uint64             // the set's sequence number of the poll buf came from
	held   map[*held]struct{} // acquired and not settled (buf included)
	okAt   map[int32]time.Time
	closed bool
}

// held is one acquired record.
type held struct {
	q         *queue
	rec       *kgo.Record
	rm        driver.ReceivedMessage
	since     time.Time // acquired
	lockEnd   time.Time // the lock's end as last confirmed
	renewAt   time.Time // when the last renewal was sent; zero when none
	releaseAt time.Time // a delayed retry's release; zero when none
	lost      bool      // LockLost reported
	settled   bool
}

// queueSet is the share consumption of one topic: WithMembers members,
// each polling on its own goroutine as soon as its previous poll is
// settled, while a Receive asks for records. One member's poll (a share
// fetch round trip, which carries the acknowledgements of its previous
// records) thus overlaps the handling of the other members' records.
type queueSet struct {
	name    string
	recv    sync.Mutex    // serialises Receive calls (one pop at a time)
	members []*queue      // fixed at creation
	ready   chan struct{} // a member buffered records or closed (buffer 1)
	seq     atomic.Uint64 // numbers the polls, so Receive hands out the oldest first

	askMu  sync.Mutex
	askCtx context.Context // the context of the last Receive
	askTil time.Time       // the deadline of the latest Receive
}

// queueFor returns the share consumption of topic, creating its members
// (and setting the group's configs) on first use.
func (t *Transport) queueFor(ctx context.Context, topic string) (*queueSet, error) {
	if t.closed.Load() {
		return nil, driver.ErrClosed
	}
	if t.cfg.group == "" {
		return nil, fmt.Errorf("kafkashare: receive from %q: no share group (WithShareGroup)", topic)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.queues[topic]; s != nil {
		return s, nil
	}
	if err := t.configureGroup(ctx); err != nil {
		return nil, err
	}
	set := &queueSet{name: topic, ready: make(chan struct{}, 1)}
	for range t.cfg.members {
		q := &queue{t: t, set: set, name: topic, kick: make(chan struct{}, 1), held: map[*held]struct{}{}, okAt: map[int32]time.Time{}}
		opts := append([]kgo.Opt{
			kgo.SeedBrokers(t.cfg.brokers...),
			kgo.ShareGroup(t.cfg.group),
			kgo.ConsumeTopics(topic),
			kgo.ShareMaxRecords(t.cfg.maxRecords),
			// Acquire only when polled: prefetched records would wait,
			// their locks running and not renewable, behind the poll
			// barrier (for as long as the slowest handler of the
			// previous poll).
			kgo.ShareMaxRecordsStrict(),
			kgo.ShareAckCallback(q.acked),
		}, t.cfg.kgoOpts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			for _, m := range set.members {
				m.close()
			}
			return nil, fmt.Errorf("kafkashare: share consumer of %q: %w", topic, err)
		}
		q.cl = cl
		set.members = append(set.members, q)
	}
	t.queues[topic] = set
	for _, q := range set.members {
		t.wg.Add(2)
		go q.keep()
		go q.run()
	}
	return set, nil
}

// configureGroup sets the share group's configs: the lock, the delivery
// count limit and (unless WithLatestOnly) share.auto.offset.reset=earliest.
func (t *Transport) configureGroup(ctx context.Context) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = t.cfg.group
	set := func(k, v string) {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, &v
		res.Configs = append(res.Configs, c)
	}
	set("share.record.lock.duration.ms", strconv.FormatInt(t.cfg.lock.Milliseconds(), 10))
	set("share.delivery.count.limit", strconv.Itoa(t.cfg.deliveryCap))
	if t.cfg.fromEarliest {
		set("share.auto.offset.reset", "earliest")
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, t.prod)
	if err != nil {
		return fmt.Errorf("kafkashare: configure share group %q: %w", t.cfg.group, err)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fmt.Errorf("kafkashare: configure share group %q: error code %d %s", t.cfg.group, r.ErrorCode, msg)
		}
	}
	return nil
}

// Receive hands out the next acquired record of queue, the oldest poll's
// first; it returns (nil, nil) when none came within timeout. While a
// Receive asks (until its deadline, its context live), every member whose
// previous poll is fully settled polls.
func (t *Transport) Receive(ctx context.Context, topic string, timeout time.Duration) (*driver.ReceivedMessage, error) {
	set, err := t.queueFor(ctx, topic)
	if err != nil {
		return nil, err
	}
	set.recv.Lock()
	defer set.recv.Unlock()
	now := time.Now()
	deadline := now.Add(timeout)
	set.ask(ctx, now, deadline)
	for {
		if rm, err := set.pop(); rm != nil || err != nil {
			return rm, err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil, nil
		}
		tm := time.NewTimer(wait)
		select {
		case <-set.ready:
			tm.Stop()
		case <-tm.C:
			return nil, nil
		case <-ctx.Done():
			tm.Stop()
			return nil, ctx.Err()
		}
	}
}

// ask records that a Receive with ctx wants records until deadline (now
// being the time of the call) and,
// when no Receive was asking (its deadline passed or its context ended),
// wakes the members' pollers. A poller asked already polls again once its
// member is free (settle wakes it), and a poll of the previous context
// that ends makes its poller look again.
func (s *queueSet) ask(ctx context.Context, now, deadline time.Time) {
	s.askMu.Lock()
	asking := s.askCtx != nil && s.askCtx.Err() == nil && now.Before(s.askTil)
	s.askCtx = ctx
	if deadline.After(s.askTil) {
		s.askTil = deadline
	}
	s.askMu.Unlock()
	if asking {
		return
	}
	for _, q := range s.members {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

// asked returns the context and deadline a poll runs under, and false
// when no Receive asks (its deadline passed or its context ended).
func (s *queueSet) asked() (context.Context, time.Time, bool) {
	s.askMu.Lock()
	defer s.askMu.Unlock()
	if s.askCtx == nil || s.askCtx.Err() != nil || !time.Now().Before(s.askTil) {
		return nil, time.Time{}, false
	}
	return s.askCtx, s.askTil, true
}

// pop takes the first buffered record of the member whose poll is the
// oldest (so that members are freed for their next poll in turn); it
// returns driver.ErrClosed once the transport closed.
func (s *queueSet) pop() (*driver.ReceivedMessage, error) {
	var from *queue
	var oldest uint64
	for _, q := range s.members {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, driver.ErrClosed
		}
		if len(q.buf) > 0 && (from == nil || q.polled < oldest) {
			from, oldest = q, q.polled
		}
		q.mu.Unlock()
	}
	if from == nil {
		return nil, nil
	}
	from.mu.Lock()
	defer from.mu.Unlock()
	if len(from.buf) == 0 { // close emptied it meanwhile (only pop takes from it, under recv)
		return nil, nil
	}
	h := from.buf[0]
	from.buf[0] = nil
	from.buf = from.buf[1:]
	return &h.rm, nil
}

// run is the member's poller: it polls whenever the member holds nothing
// and a Receive asks, and stops with the transport.
func (q *queue) run() {
	defer q.t.wg.Done()
	for {
		select {
		case <-q.t.stop:
			return
		default:
		}
		ctx, until, asked := q.set.asked()
		q.mu.Lock()
		free := len(q.held) == 0 && !q.closed
		q.mu.Unlock()
		if asked && free {
			if !q.poll(ctx, until) {
				q.pause(pollErrorPause)
			}
			continue
		}
		select {
		case <-q.t.stop:
			return
		case <-q.kick:
		}
	}
}

// pollErrorPause is how long a member waits after a poll that failed.
const pollErrorPause = 100 * time.Millisecond

// pause waits d on the transport's clock, or until the transport stops.
func (q *queue) pause(d time.Duration) {
	tm := q.t.cfg.clock.NewTimer(d)
	defer tm.Stop()
	select {
	case <-q.t.stop:
	case <-tm.C():
	}
}

// poll acquires the member's next records into buf, the poll ending at
// until, when ctx ends or when the transport stops; it reports false when
// the fetch failed (logged) and nothing came.
func (q *queue) poll(ctx context.Context, until time.Time) bool {
	pctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	unhook := context.AfterFunc(q.t.stopCtx, cancel)
	defer unhook()
	fs := q.cl.PollRecords(pctx, int(q.t.cfg.maxRecords))
	ok := true
	for _, fe := range fs.Errors() {
		switch {
		case errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, context.Canceled),
			errors.Is(fe.Err, kgo.ErrClientClosed):
		default:
			ok = false
			q.t.cfg.log().Warn("kafkashare: share fetch error; polling again", "queue", q.name, "err", fe.Err)
		}
	}
	n := fs.NumRecords()
	if n == 0 {
		return ok
	}
	q.add(fs)
	return true
}

// add holds the records of a poll, buffered for Receive, and wakes a
// waiting Receive.
func (q *queue) add(fs kgo.Fetches) {
	now := q.t.cfg.clock.Now()
	q.mu.Lock()
	q.polled = q.set.seq.Add(1)
	fs.EachRecord(func(r *kgo.Record) {
		h := &held{q: q, rec: r, since: now, lockEnd: r.AcquisitionDeadline()}
		h.rm = delivery(q.t, h)
		q.buf = append(q.buf, h)
		q.held[h] = struct{}{}
	})
	q.mu.Unlock()
	q.set.signal()
}

// signal wakes a waiting Receive.
func (s *queueSet) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// delivery builds the ReceivedMessage of a record, its attempts reconciled
// (reconcile). The body and the header values view the record's bytes
// without a copy: franz-go allocates them per fetch and, given no pools
// (WithClientOptions), never writes them again. The headers are deferred
// (driver.ReceivedMessage.DeferHeaders): the App builds their map only
// when it needs it.
func delivery(t *Transport, h *held) driver.ReceivedMessage {
	r := h.rec
	rm := driver.ReceivedMessage{
		Body: bytesString(r.Value), Queue: r.Topic, Handle: h,
		Key: r.Key, Partition: r.Partition, Offset: r.Offset, Group: t.cfg.group,
	}
	if len(r.Headers) > 0 {
		rm.DeferHeaders(h)
	}
	v, present := h.LookupHeader(wire.HeaderSchemaVersion)
	if wire.CheckSchemaVersionHeader(v, present) != nil {
		return rm // the App dead-letters it as received (CONTRACT.md 4.3)
	}
	reconcile(&rm, int(r.DeliveryCount()))
	return rm
}

// LookupHeader returns the last value of key among the record's headers
// (driver.HeaderSource).
func (h *held) LookupHeader(key string) (string, bool) {
	hs := h.rec.Headers
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return bytesString(hs[i].Value), true
		}
	}
	return "", false
}

// HeaderMap returns the record's headers as a new map, the last value of
// a key carried twice winning (driver.HeaderSource); nil when none.
func (h *held) HeaderMap() map[string]string {
	hs := h.rec.Headers
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, hd := range hs {
		m[hd.Key] = bytesString(hd.Value)
	}
	return m
}

// bytesString returns b as a string without a copy; b must not change.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// reconcile applies the share-group attempts rule: the attempts of the
// Kafka binding (a valid bq-attempts header, else the body's), then at
// least deliveryCount-1, the deliveries before this one the broker counted
// (the Pulsar rule with the delivery count as redelivery count). When the
// count moves, the body's attempts and the bq-attempts header carry it
// (the deferred headers filled first).
func reconcile(rm *driver.ReceivedMessage, deliveryCount int) {
	hdr, present := rm.Header(wire.HeaderAttempts)
	if !present && deliveryCount <= 1 {
		return // the body's count stands: nothing to parse or change
	}
	body, bodyOK := wire.BodyAttempts(rm.Body)
	n := wire.ReconcilePulsar(body, hdr, present, max(deliveryCount-1, 0))
	if bodyOK && n != body {
		if out, err := wire.SetAttempts([]byte(rm.Body), n); err == nil {
			rm.Body = string(out)
		}
	}
	if cur, ok := wire.ParseAttemptsHeader(hdr); (present && (!ok || cur != n)) || (!present && n > 0) {
		rm.FillHeaders()
		if rm.Headers == nil {
			rm.Headers = map[string]string{}
		}
		rm.Headers[wire.HeaderAttempts] = strconv.Itoa(n)
	}
}

func heldOf(msg *driver.ReceivedMessage) (*held, error) {
	h, ok := msg.Handle.(*held)
	if !ok || h == nil {
		return nil, errors.New("kafkashare: a message this transport did not deliver")
	}
	return h, nil
}

// Ack accepts the record: the broker will not deliver it again. It
// returns at once; franz-go sends the acknowledgement.
func (t *Transport) Ack(_ context.Context, msg *driver.ReceivedMessage) error {
	h, err := heldOf(msg)
	if err != nil {
		return err
	}
	h.q.settle(h, kgo.AckAccept)
	return nil
}

// HandBack releases the record: the broker delivers it again, to this
// or another member, its delivery count increased.
func (t *Transport) HandBack(_ context.Context, msg *driver.ReceivedMessage) error {
	h, err := heldOf(msg)
	if err != nil {
		return err
	}
	h.q.settle(h, kgo.AckRelease)
	return nil
}

// settle gives h its terminal acknowledgement, once.
func (q *queue) settle(h *held, status kgo.AckStatus) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.settleLocked(h, status)
}

func (q *queue) settleLocked(h *held, status kgo.AckStatus) {
	if h.settled {
		return
	}
	h.settled = true
	h.rec.Ack(status)
	delete(q.held, h)
	if len(q.held) == 0 {
		select {
		case q.kick <- struct{}{}: // a nil kick (no poller) is never ready
		default:
		}
	}
}

// retry releases h at once, or marks it for release after the retry
// delay (kept by keep); it returns the delay.
func (q *queue) retry(h *held) time.Duration {
	d := q.t.cfg.retryDelay
	q.mu.Lock()
	defer q.mu.Unlock()
	if d <= 0 {
		q.settleLocked(h, kgo.AckRelease)
		defer q.flush()
		return 0
	}
	if !h.settled {
		h.releaseAt = q.t.cfg.clock.Now().Add(d)
	}
	return d
}

// acked records, per partition, when the broker last confirmed an
// acknowledgement (ShareAckCallback): renewals sent before it hold.
func (q *queue) acked(_ *kgo.Client, rs kgo.ShareAckResults) {
	now := q.t.cfg.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range rs {
		if r.Topic != q.name {
			continue
		}
		if r.Err != nil {
			q.t.cfg.log().Warn("kafkashare: share acknowledgement failed", "queue", q.name, "partition", r.Partition, "err", r.Err)
			for h := range q.held {
				if h.rec.Partition == r.Partition {
					h.renewAt = time.Time{} // renew again at the next sweep
				}
			}
			continue
		}
		q.okAt[r.Partition] = now
	}
	for h := range q.held {
		if !h.renewAt.IsZero() && !now.Before(h.renewAt) && !q.okAt[h.rec.Partition].Before(h.renewAt) {
			h.lockEnd = h.renewAt.Add(q.t.cfg.lock)
			h.renewAt = time.Time{}
		}
	}
}

// tick is how often keep looks at the held records.
const tick = 20 * time.Millisecond

// keep renews the locks of held records (at a third of the lock), releases
// delayed retries when due and reports locks that passed unrenewed. It
// stops with the transport.
func (q *queue) keep() {
	defer q.t.wg.Done()
	for {
		tm := q.t.cfg.clock.NewTimer(tick)
		select {
		case <-q.t.stop:
			tm.Stop()
			return
		case <-tm.C():
		}
		q.sweep(q.t.cfg.clock.Now())
	}
}

func (q *queue) sweep(now time.Time) {
	var lost []LockLost
	sent := false
	q.mu.Lock()
	renewBefore := q.t.cfg.lock * 2 / 3
	for h := range q.held {
		if !h.releaseAt.IsZero() && !now.Before(h.releaseAt) {
			q.settleLocked(h, kgo.AckRelease)
			sent = true
			continue
		}
		if !h.lost && now.After(h.lockEnd) {
			h.lost = true
			lost = append(lost, LockLost{Topic: h.rec.Topic, Partition: h.rec.Partition, Offset: h.rec.Offset, Held: now.Sub(h.since)})
			continue
		}
		if h.renewAt.IsZero() && h.lockEnd.Sub(now) < renewBefore {
			h.renewAt = now
			h.rec.Ack(kgo.AckRenew)
			sent = true
		}
	}
	q.mu.Unlock()
	if sent {
		q.flush()
	}
	for _, l := range lost {
		q.t.cfg.log().Warn("kafkashare: acquisition lock expired while the record was held; the broker may deliver it again",
			"topic", l.Topic, "partition", l.Partition, "offset", l.Offset, "held", l.Held)
		if fn := q.t.cfg.onLockLost; fn != nil {
			fn(l)
		}
	}
}

// close releases what is still held and closes the client (leaving the
// share group).
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	for h := range q.held {
		q.settleLocked(h, kgo.AckRelease)
	}
	q.buf = nil
	q.mu.Unlock()
	if q.set != nil {
		q.set.signal() // a waiting Receive returns ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = q.cl.FlushAcks(ctx)
	q.cl.Close()
}

// done is an ended context: FlushAcks with it asks franz-go to send the
// pending acknowledgements now without waiting for them.
var done = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// flush sends pending acknowledgements (renewals, releases) now rather
// than after franz-go's one-second ack linger.
func (q *queue) flush() { _ = q.cl.FlushAcks(done) }
