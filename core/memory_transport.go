package babelqueue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"
)

// InMemoryTransport is a Transport held in process memory, for tests and
// broker-free runs. It implements every optional capability of the
// Transport contract and behaves like a broker that:
//
//   - projects the contract headers from the body on every publish (as a
//     binding does), merging out-of-band headers by the MergeHeaders rules;
//   - keeps a message key (PublishKeyed) on every keyed republish and on
//     Forward, which writes headers exactly as given;
//   - makes a delayed message (PublishDelayed, PublishDelayedWithHeaders,
//     PublishRetryForAttempt)
//     visible when its Clock reaches the due time;
//   - reserves a popped message until it is acknowledged (Ack, Retry),
//     rewound (Rewind: back to the head, unchanged) or negatively
//     acknowledged (Nack: back to the head, its redelivery count plus one);
//   - reconciles attempts on Pop like the Pulsar binding: the valid
//     bq-attempts header, else the body's attempts, then at least the
//     redelivery count; the body is rewritten only when its integer
//     attempts changes.
//
// Pop waits for a message without polling: it sleeps until a write, the
// due time of a delayed message (on the Clock), the timeout (wall time,
// whatever the Clock) or the end of ctx. The zero value is not usable; use
// NewInMemoryTransport. Every method is safe for concurrent use.
type InMemoryTransport struct {
	clock Clock
	tiers []time.Duration

	mu      sync.Mutex
	queues  map[string]*memQueue
	changed chan struct{} // closed and replaced on every change
	closed  bool
	fault   func(op, queue string) error
	nextID  uint64
}

// MemoryOption configures NewInMemoryTransport.
type MemoryOption func(*InMemoryTransport)

// WithMemoryClock sets the clock of delayed delivery (default SystemClock{}).
func WithMemoryClock(c Clock) MemoryOption {
	return func(t *InMemoryTransport) {
		if c != nil {
			t.clock = c
		}
	}
}

// WithMemoryRetryTiers configures the delays of PublishRetryForAttempt
// (sorted ascending). Without tiers it returns ErrDelayUnsupported, so the
// App falls through to Retry. A retry for attemptsBefore attempts waits
// tier min(attemptsBefore, N-1)+1 (1-based) and is then delivered to the
// queue it came from.
func WithMemoryRetryTiers(tiers ...time.Duration) MemoryOption {
	return func(t *InMemoryTransport) {
		t.tiers = slices.Clone(tiers)
		slices.Sort(t.tiers)
	}
}

// NewInMemoryTransport returns an empty InMemoryTransport.
func NewInMemoryTransport(opts ...MemoryOption) *InMemoryTransport {
	t := &InMemoryTransport{
		clock:   SystemClock{},
		queues:  make(map[string]*memQueue),
		changed: make(chan struct{}),
	}
	for _, o := range opts {
		if o != nil {
			o(t)
		}
	}
	return t
}

// MemoryMessage is a snapshot of one stored message.
type MemoryMessage struct {
	Body    string
	Headers map[string]string
	// Key is the message key; nil when it has none.
	Key []byte
	// Redeliveries counts the negative acknowledgements of the message.
	Redeliveries int
	// DeliverAt is the due time of a delayed message not yet visible; zero
	// for a visible one.
	DeliverAt time.Time
}

type memMessage struct {
	id           uint64
	body         string
	bodyAttempts int  // the body's integer attempts, when hasAttempts
	hasAttempts  bool // whether the body holds an integer attempts
	headers      map[string]string
	key          []byte
	redeliveries int
	due          time.Time // zero: visible
}

type memQueue struct {
	ready    []*memMessage
	delayed  []*memMessage // by due time, then publish order
	reserved map[uint64]*memMessage
	acked    int
}

// memHandle is the Handle of a message popped from an InMemoryTransport.
type memHandle struct {
	t     *InMemoryTransport
	queue string
	m     *memMessage
}

// SetFault installs fn, called before every operation with the method name
// ("Publish", "PublishWithHeaders", "PublishFrom", "PublishFromWithHeaders",
// "Forward", "PublishDelayed", "PublishDelayedWithHeaders",
// "PublishRetryForAttempt", "Retry", "Pop",
// "Ack", "Nack", "Rewind") and the queue it concerns (for a write, the
// queue written to). A non-nil error fails the operation, which then
// changes nothing. nil removes the fault. It lets a test simulate a broker
// that refuses a write.
func (t *InMemoryTransport) SetFault(fn func(op, queue string) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fault = fn
}

// Close makes every later call return an error matching ErrClosed and
// wakes the Pop calls waiting. Stored messages are kept for inspection.
func (t *InMemoryTransport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		t.notifyLocked()
	}
	return nil
}

// check runs the fault hook and the closed check before op.
func (t *InMemoryTransport) check(op, queue string) error {
	t.mu.Lock()
	closed, fault := t.closed, t.fault
	t.mu.Unlock()
	if closed {
		return fmt.Errorf("babelqueue: in-memory %s %s: %w", op, queue, ErrClosed)
	}
	if fault != nil {
		if err := fault(op, queue); err != nil {
			return fmt.Errorf("babelqueue: in-memory %s %s: %w", op, queue, err)
		}
	}
	return nil
}

func (t *InMemoryTransport) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *InMemoryTransport) queueLocked(name string) *memQueue {
	q := t.queues[name]
	if q == nil {
		q = &memQueue{reserved: make(map[uint64]*memMessage)}
		t.queues[name] = q
	}
	return q
}

// enqueueLocked stores m on queue, delayed until due when due is after now.
func (t *InMemoryTransport) enqueueLocked(queue string, m *memMessage, due time.Time) {
	t.nextID++
	m.id = t.nextID
	q := t.queueLocked(queue)
	if !due.IsZero() && due.After(t.clock.Now()) {
		m.due = due
		i := sort.Search(len(q.delayed), func(i int) bool { return q.delayed[i].due.After(due) })
		q.delayed = slices.Insert(q.delayed, i, m)
	} else {
		q.ready = append(q.ready, m)
	}
	t.notifyLocked()
}

// promoteLocked makes the delayed messages of q that are due visible.
func promoteLocked(q *memQueue, now time.Time) {
	n := 0
	for n < len(q.delayed) && !q.delayed[n].due.After(now) {
		q.delayed[n].due = time.Time{}
		n++
	}
	if n > 0 {
		q.ready = append(q.ready, q.delayed[:n]...)
		q.delayed = slices.Delete(q.delayed, 0, n)
	}
}

func projectHeaders(body string, extra map[string]string) map[string]string {
	hs := MergeHeaders(ProjectBody([]byte(body)).Headers(), extra)
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Key] = h.Value
	}
	return out
}

func (t *InMemoryTransport) write(op, queue, body string, headers map[string]string, key []byte, due time.Time) error {
	if err := t.check(op, queue); err != nil {
		return err
	}
	m := newMemMessage(body, headers, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.enqueueLocked(queue, m, due)
	return nil
}

// newMemMessage stores body, reading its attempts once for the
// reconciliation of every later delivery.
func newMemMessage(body string, headers map[string]string, key []byte) *memMessage {
	n, ok := ParseAttemptsHeader(ProjectBody([]byte(body)).Attempts)
	return &memMessage{body: body, bodyAttempts: n, hasAttempts: ok, headers: headers, key: slices.Clone(key)}
}

// keyOf returns the key of a message popped from t, nil for any other.
func (t *InMemoryTransport) keyOf(from *ReceivedMessage) []byte {
	if from == nil {
		return nil
	}
	if h, ok := from.Handle.(*memHandle); ok && h.t == t {
		return h.m.key
	}
	return nil
}

// Publish stores body on queue with the contract headers projected from it.
func (t *InMemoryTransport) Publish(ctx context.Context, queue, body string) error {
	return t.write("Publish", queue, body, projectHeaders(body, nil), nil, time.Time{})
}

// PublishWithHeaders is Publish with out-of-band headers (HeaderPublisher).
func (t *InMemoryTransport) PublishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error {
	return t.write("PublishWithHeaders", queue, body, projectHeaders(body, headers), nil, time.Time{})
}

// PublishKeyed is PublishWithHeaders with a message key, which keyed
// republishes and Forward keep. It stands for a producer in another
// service that sets keys.
func (t *InMemoryTransport) PublishKeyed(ctx context.Context, queue string, key []byte, body string, headers map[string]string) error {
	return t.write("Publish", queue, body, projectHeaders(body, headers), key, time.Time{})
}

// PublishFrom writes body to queue with the projected headers and the key
// of from (KeyedRepublisher).
func (t *InMemoryTransport) PublishFrom(ctx context.Context, queue, body string, from *ReceivedMessage) error {
	return t.write("PublishFrom", queue, body, projectHeaders(body, nil), t.keyOf(from), time.Time{})
}

// PublishFromWithHeaders is PublishFrom with out-of-band headers
// (HeaderRepublisher).
func (t *InMemoryTransport) PublishFromWithHeaders(ctx context.Context, queue, body string, from *ReceivedMessage, headers map[string]string) error {
	return t.write("PublishFromWithHeaders", queue, body, projectHeaders(body, headers), t.keyOf(from), time.Time{})
}

// Forward writes body to queue with exactly headers and the key of from
// (Forwarder).
func (t *InMemoryTransport) Forward(ctx context.Context, queue, body string, from *ReceivedMessage, headers map[string]string) error {
	return t.write("Forward", queue, body, maps.Clone(headers), t.keyOf(from), time.Time{})
}

// PublishDelayed stores body on queue, visible once the Clock has moved
// delay past now (DelayedPublisher). It never refuses a delay.
func (t *InMemoryTransport) PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error {
	return t.write("PublishDelayed", queue, body, projectHeaders(body, nil), nil, t.clock.Now().Add(delay))
}

// PublishDelayedWithHeaders is PublishDelayed with out-of-band headers
// (DelayedHeaderPublisher), delivered with the message once it is due.
func (t *InMemoryTransport) PublishDelayedWithHeaders(ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error {
	return t.write("PublishDelayedWithHeaders", queue, body, projectHeaders(body, headers), nil, t.clock.Now().Add(delay))
}

// PublishRetryForAttempt (TieredRetrier) delivers a copy of from, with
// attempts = attemptsBefore+1 in body and header and the key and headers of
// from, to the queue it came from after the delay of its tier. Without
// tiers it returns ErrDelayUnsupported and writes nothing. The caller
// acknowledges from.
func (t *InMemoryTransport) PublishRetryForAttempt(ctx context.Context, from *ReceivedMessage, attemptsBefore int) error {
	if len(t.tiers) == 0 {
		return fmt.Errorf("babelqueue: in-memory retry: no retry tiers: %w", ErrDelayUnsupported)
	}
	if from == nil {
		return fmt.Errorf("babelqueue: in-memory retry: nil message")
	}
	tier := t.tiers[min(max(attemptsBefore, 0), len(t.tiers)-1)]
	body, headers := withAttempts(from.Body, from.Headers, attemptsBefore+1)
	return t.write("PublishRetryForAttempt", from.Queue, body, headers, t.keyOf(from), t.clock.Now().Add(tier))
}

// withAttempts returns body with attempts = n (unchanged when it has no
// integer attempts) and a copy of headers with bq-attempts = n.
func withAttempts(body string, headers map[string]string, n int) (string, map[string]string) {
	if b, err := SetAttempts([]byte(body), n); err == nil {
		body = string(b)
	}
	h := maps.Clone(headers)
	if h == nil {
		h = make(map[string]string)
	}
	h[HeaderAttempts] = strconv.Itoa(n)
	return body, h
}

// Retry (Retrier) settles msg and stores, in the same step, a copy of it
// with attempts = counted in body and header, its headers and its key, at
// the tail of its queue.
func (t *InMemoryTransport) Retry(ctx context.Context, msg *ReceivedMessage, counted int) error {
	if err := t.check("Retry", queueOf(msg)); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, q, err := t.reservedLocked("Retry", msg)
	if err != nil {
		return err
	}
	body, headers := withAttempts(msg.Body, msg.Headers, counted)
	delete(q.reserved, h.m.id)
	q.acked++
	t.enqueueLocked(h.queue, newMemMessage(body, headers, h.m.key), time.Time{})
	return nil
}

// Pop reserves the next visible message of queue, waiting at most timeout
// for one. It returns (nil, nil) when none came in time, and ctx.Err()
// when ctx ended first.
func (t *InMemoryTransport) Pop(ctx context.Context, queue string, timeout time.Duration) (*ReceivedMessage, error) {
	var deadline <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		deadline = tm.C
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := t.check("Pop", queue); err != nil {
			return nil, err
		}
		t.mu.Lock()
		now := t.clock.Now()
		q := t.queueLocked(queue)
		promoteLocked(q, now)
		if len(q.ready) > 0 {
			m := q.ready[0]
			q.ready[0] = nil
			q.ready = q.ready[1:]
			q.reserved[m.id] = m
			t.mu.Unlock()
			return t.delivery(queue, m), nil
		}
		changed := t.changed
		var due time.Time
		if len(q.delayed) > 0 {
			due = q.delayed[0].due
		}
		t.mu.Unlock()
		if timeout <= 0 {
			return nil, nil
		}
		var wake <-chan time.Time
		var timer Timer
		if !due.IsZero() {
			timer = t.clock.NewTimer(due.Sub(now))
			wake = timer.C()
		}
		select {
		case <-changed:
		case <-wake:
		case <-deadline:
			if timer != nil {
				timer.Stop()
			}
			return nil, nil
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil, ctx.Err()
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// delivery builds the ReceivedMessage of a reserved message, reconciling
// its attempts.
func (t *InMemoryTransport) delivery(queue string, m *memMessage) *ReceivedMessage {
	body := m.body
	headers := maps.Clone(m.headers)
	if v, ok := m.headers[HeaderSchemaVersion]; CheckSchemaVersionHeader(v, ok) != nil {
		// A version-gated message is handed over exactly as it was
		// published: the App moves it to the dead-letter queue unchanged.
		return &ReceivedMessage{Body: body, Queue: queue, Headers: headers, Handle: &memHandle{t: t, queue: queue, m: m}}
	}
	hv, present := m.headers[HeaderAttempts]
	rec := ReconcilePulsar(m.bodyAttempts, hv, present, m.redeliveries)
	if m.hasAttempts && rec != m.bodyAttempts {
		if b, err := SetAttempts([]byte(body), rec); err == nil {
			body = string(b)
		}
	}
	if present || m.redeliveries > 0 {
		if headers == nil {
			headers = make(map[string]string)
		}
		headers[HeaderAttempts] = strconv.Itoa(rec)
	}
	return &ReceivedMessage{Body: body, Queue: queue, Headers: headers, Handle: &memHandle{t: t, queue: queue, m: m}}
}

func queueOf(msg *ReceivedMessage) string {
	if msg == nil {
		return ""
	}
	return msg.Queue
}

func (t *InMemoryTransport) reservedLocked(op string, msg *ReceivedMessage) (*memHandle, *memQueue, error) {
	if msg == nil {
		return nil, nil, fmt.Errorf("babelqueue: in-memory %s: nil message", op)
	}
	h, ok := msg.Handle.(*memHandle)
	if !ok || h.t != t {
		return nil, nil, fmt.Errorf("babelqueue: in-memory %s: message was not popped from this transport", op)
	}
	q := t.queueLocked(h.queue)
	if q.reserved[h.m.id] != h.m {
		return nil, nil, fmt.Errorf("babelqueue: in-memory %s %s: message is not reserved (already settled or handed back)", op, h.queue)
	}
	return h, q, nil
}

// Ack settles a reserved message. Settling a message twice, or one handed
// back by Rewind or Nack, is an error.
func (t *InMemoryTransport) Ack(ctx context.Context, msg *ReceivedMessage) error {
	if err := t.check("Ack", queueOf(msg)); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, q, err := t.reservedLocked("Ack", msg)
	if err != nil {
		return err
	}
	delete(q.reserved, h.m.id)
	q.acked++
	t.notifyLocked()
	return nil
}

// Rewind (Rewinder) puts a reserved message back at the head of its queue,
// unchanged.
func (t *InMemoryTransport) Rewind(ctx context.Context, msg *ReceivedMessage) error {
	return t.handBack("Rewind", msg, 0)
}

// Nack (NegativeAcknowledger) puts a reserved message back at the head of
// its queue with its redelivery count increased by one.
func (t *InMemoryTransport) Nack(ctx context.Context, msg *ReceivedMessage) error {
	return t.handBack("Nack", msg, 1)
}

func (t *InMemoryTransport) handBack(op string, msg *ReceivedMessage, redelivered int) error {
	if err := t.check(op, queueOf(msg)); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, q, err := t.reservedLocked(op, msg)
	if err != nil {
		return err
	}
	delete(q.reserved, h.m.id)
	h.m.redeliveries += redelivered
	q.ready = slices.Insert(q.ready, 0, h.m)
	t.notifyLocked()
	return nil
}

// Len returns how many messages of queue wait to be popped, delayed ones
// included (reserved ones are not).
func (t *InMemoryTransport) Len(queue string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[queue]
	if q == nil {
		return 0
	}
	return len(q.ready) + len(q.delayed)
}

// InFlight returns how many messages of queue are reserved: popped and not
// yet acknowledged or handed back.
func (t *InMemoryTransport) InFlight(queue string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[queue]
	if q == nil {
		return 0
	}
	return len(q.reserved)
}

// Acked returns how many messages of queue were settled by Ack or Retry.
func (t *InMemoryTransport) Acked(queue string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[queue]
	if q == nil {
		return 0
	}
	return q.acked
}

// Messages returns a snapshot of the messages of queue waiting to be
// popped: the visible ones in delivery order, then the delayed ones by due
// time. Reserved messages are not included.
func (t *InMemoryTransport) Messages(queue string) []MemoryMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[queue]
	if q == nil {
		return nil
	}
	out := make([]MemoryMessage, 0, len(q.ready)+len(q.delayed))
	for _, m := range slices.Concat(q.ready, q.delayed) {
		out = append(out, MemoryMessage{
			Body:         m.body,
			Headers:      maps.Clone(m.headers),
			Key:          slices.Clone(m.key),
			Redeliveries: m.redeliveries,
			DeliverAt:    m.due,
		})
	}
	return out
}

// Queues returns the names of the queues that were ever used, sorted.
func (t *InMemoryTransport) Queues() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.queues))
}
