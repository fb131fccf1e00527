package bqtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// InMemoryTransport is a driver.Transport held in process memory, for tests and
// broker-free runs. It behaves like a broker that:
//
//   - projects the contract headers from the body on every Send but
//     driver.IntentForward and driver.IntentRestore (which write headers as given),
//     merging out-of-band headers by the wire.MergeHeaders rules;
//   - keeps a message key (driver.Outgoing.Key, else the key of driver.Outgoing.From);
//   - makes a delayed message (driver.Outgoing.Delay, a retry with tiers) visible
//     when its driver.Clock reaches the due time;
//   - reserves a received message until it is acknowledged or handed back
//     (HandBack: back to its place, before every later message of its
//     queue, unchanged, or with its redelivery count plus one under
//     driver.HandBackNack);
//   - reconciles attempts on Receive like the Pulsar binding: the valid
//     bq-attempts header, else the body's attempts, then at least the
//     redelivery count; the body is rewritten only when its integer
//     attempts changes;
//   - spreads each queue over partitions (WithMemoryPartitions; one by
//     default): a keyed message goes to the partition of its key's hash,
//     a keyless one round robin; a partition keeps its order, a handed-back
//     message returns to its place in it, and each partition has a commit
//     position (Committed) that advances only over its contiguous prefix
//     of settled messages, as a Kafka group commits;
//   - hands out the next message of one partition on request, ahead of
//     the other partitions' messages (ReceiveReadyFrom, the
//     driver.PartitionReadyReceiver an App's partition lanes use), as a
//     Kafka consumer that reads each partition on its own.
//
// WithMemoryFeatures narrows what it does, to stand for a binding with
// fewer features. Receive waits for a message without polling: it sleeps
// until a write, the due time of a delayed message (on the driver.Clock), the
// timeout (wall time, whatever the driver.Clock) or the end of ctx. The zero value
// is not usable; use NewInMemoryTransport. Every method is safe for
// concurrent use.
type InMemoryTransport struct {
	clock      driver.Clock
	tiers      []time.Duration
	features   driver.Features
	partitions int
	maxBytes   int     // the largest body Send accepts; 0: no limit
	errs       []error // the problems the options found

	mu      sync.Mutex
	queues  map[string]*memQueue
	changed chan struct{} // closed and replaced on every change
	closed  bool
	fault   func(op, queue string) error
	nextID  uint64
	nextSeq uint64
}

// MemoryOption configures NewInMemoryTransport. An option that rejects its
// value records the problem; NewInMemoryTransport panics with all of them
// joined, as a test kit does on misuse (see net/http/httptest). A nil
// MemoryOption is ignored.
type MemoryOption func(*InMemoryTransport)

// WithMemoryClock sets the clock of delayed delivery (default driver.SystemClock{}).
func WithMemoryClock(c driver.Clock) MemoryOption {
	return func(t *InMemoryTransport) {
		if c == nil {
			t.errs = append(t.errs, fmt.Errorf("bqtest: %w: memory clock is nil", driver.ErrInvalidOption))
			return
		}
		t.clock = c
	}
}

// WithMemoryRetryTiers configures the delays of driver.IntentRetry, sorted
// ascending. A retry of a message with Attempt attempts waits the 1-based
// tier min(Attempt, N-1)+1 and is then delivered to its queue. Without
// tiers a retry goes to the tail of its queue at once.
func WithMemoryRetryTiers(tiers ...time.Duration) MemoryOption {
	return func(t *InMemoryTransport) {
		for _, d := range tiers {
			if d <= 0 {
				t.errs = append(t.errs, fmt.Errorf("bqtest: %w: retry tier %v is not positive", driver.ErrInvalidOption, d))
				return
			}
		}
		t.tiers = slices.Clone(tiers)
		slices.Sort(t.tiers)
	}
}

// WithMemoryFeatures sets what the transport reports and does (default:
// Keys, Headers and Delay on, driver.HandBackRewind, SettlesRetry off). A feature
// turned off is dropped from every write (keys, headers) or refused (a
// delay, driver.ErrDelayUnsupported).
func WithMemoryFeatures(f driver.Features) MemoryOption {
	return func(t *InMemoryTransport) { t.features = f }
}

// WithMemoryPartitions spreads every queue over n partitions (default 1;
// n must be at least 1). See InMemoryTransport.
func WithMemoryPartitions(n int) MemoryOption {
	return func(t *InMemoryTransport) {
		if n < 1 {
			t.errs = append(t.errs, fmt.Errorf("bqtest: %w: %d memory partitions: at least 1", driver.ErrInvalidOption, n))
			return
		}
		t.partitions = n
	}
}

// WithMemoryMaxMessageBytes makes Send refuse a body longer than n bytes
// with an error matching driver.ErrTooLarge, writing nothing. A broker
// refuses a record above its size limit the same way. By default there is
// no limit; n must be at least 1.
func WithMemoryMaxMessageBytes(n int) MemoryOption {
	return func(t *InMemoryTransport) {
		if n < 1 {
			t.errs = append(t.errs, fmt.Errorf("bqtest: %w: max message bytes %d: at least 1", driver.ErrInvalidOption, n))
			return
		}
		t.maxBytes = n
	}
}

// NewInMemoryTransport returns an empty InMemoryTransport.
func NewInMemoryTransport(opts ...MemoryOption) *InMemoryTransport {
	t := &InMemoryTransport{
		clock:      driver.SystemClock{},
		queues:     make(map[string]*memQueue),
		changed:    make(chan struct{}),
		features:   driver.Features{Keys: true, Headers: true, Delay: true, HandBack: driver.HandBackRewind},
		partitions: 1,
	}
	for _, o := range opts {
		if o != nil {
			o(t)
		}
	}
	if err := errors.Join(t.errs...); err != nil {
		panic(err)
	}
	return t
}

// MemoryMessage is a snapshot of one stored message.
type MemoryMessage struct {
	Body    string
	Headers map[string]string
	// Key is the message key; nil when it has none.
	Key []byte
	// Partition is the partition the message is stored in.
	Partition int32
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
	partition    int32
	offset       int64  // position in its partition
	seq          uint64 // order of the ready list, set when first visible
}

type memQueue struct {
	ready    []*memMessage
	delayed  []*memMessage // by due time, then publish order
	reserved map[uint64]*memMessage
	acked    int
	parts    []memPartition
	rr       int // round robin of keyless messages
}

// memPartition is the offset and commit state of one partition.
type memPartition struct {
	next int64              // offset of the next stored message
	open map[int64]struct{} // offsets stored and not yet settled
}

// memHandle is the Handle of a message popped from an InMemoryTransport.
type memHandle struct {
	t     *InMemoryTransport
	queue string
	m     *memMessage
}

// SetFault installs fn, called before every operation; a non-nil error
// fails the operation, which then changes nothing. fn gets the operation's
// name and the queue it concerns: the driver.Intent of a Send, such as
// "publish", "retry" or "dead_letter", or "Receive", "Ack", "HandBack"; for
// a write, the queue written to. nil removes the fault. It lets a test
// simulate a broker that refuses a write.
func (t *InMemoryTransport) SetFault(fn func(op, queue string) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fault = fn
}

// Close makes every later call return an error matching driver.ErrClosed and
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
		return fmt.Errorf("babelqueue: in-memory %s %s: %w", op, queue, driver.ErrClosed)
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
		q = &memQueue{reserved: make(map[uint64]*memMessage), parts: make([]memPartition, t.partitions)}
		for i := range q.parts {
			q.parts[i].open = make(map[int64]struct{})
		}
		t.queues[name] = q
	}
	return q
}

// enqueueLocked stores m on queue, delayed until due when due is after now.
func (t *InMemoryTransport) enqueueLocked(queue string, m *memMessage, due time.Time) {
	t.nextID++
	m.id = t.nextID
	q := t.queueLocked(queue)
	if m.key != nil {
		m.partition = int32(partitionOfKey(m.key, len(q.parts)))
	} else {
		m.partition = int32(q.rr % len(q.parts))
		q.rr++
	}
	p := &q.parts[m.partition]
	m.offset = p.next
	p.next++
	p.open[m.offset] = struct{}{}
	if !due.IsZero() && due.After(t.clock.Now()) {
		m.due = due
		i := sort.Search(len(q.delayed), func(i int) bool { return q.delayed[i].due.After(due) })
		q.delayed = slices.Insert(q.delayed, i, m)
	} else {
		t.nextSeq++
		m.seq = t.nextSeq
		q.ready = append(q.ready, m)
	}
	t.notifyLocked()
}

// PartitionFor returns the partition a message with a non-nil key is stored
// in: the key's 32-bit FNV-1a hash modulo the partitions of
// WithMemoryPartitions.
func (t *InMemoryTransport) PartitionFor(key []byte) int {
	return partitionOfKey(key, t.partitions)
}

// partitionOfKey is the 32-bit FNV-1a hash of key modulo n.
func partitionOfKey(key []byte, n int) int {
	h := uint32(2166136261)
	for _, b := range key {
		h ^= uint32(b)
		h *= 16777619
	}
	return int(h % uint32(n))
}

// settleLocked marks the reserved m of q settled for its partition's
// commit position.
func settleLocked(q *memQueue, m *memMessage) {
	delete(q.reserved, m.id)
	delete(q.parts[m.partition].open, m.offset)
	q.acked++
}

// promoteLocked makes the delayed messages of q that are due visible.
func (t *InMemoryTransport) promoteLocked(q *memQueue, now time.Time) {
	n := 0
	for n < len(q.delayed) && !q.delayed[n].due.After(now) {
		q.delayed[n].due = time.Time{}
		t.nextSeq++
		q.delayed[n].seq = t.nextSeq
		n++
	}
	if n > 0 {
		q.ready = append(q.ready, q.delayed[:n]...)
		q.delayed = slices.Delete(q.delayed, 0, n)
	}
}

// newMemMessage stores body, reading its attempts once for the
// reconciliation of every later delivery.
func newMemMessage(body string, headers map[string]string, key []byte) *memMessage {
	n, ok := wire.BodyAttempts([]byte(body))
	return &memMessage{body: body, bodyAttempts: n, hasAttempts: ok, headers: headers, key: slices.Clone(key)}
}

// keyOf returns the key of a message popped from t, nil for any other.
func (t *InMemoryTransport) keyOf(from *driver.ReceivedMessage) []byte {
	if from == nil {
		return nil
	}
	if h, ok := from.Handle.(*memHandle); ok && h.t == t {
		return h.m.key
	}
	return nil
}

// Features reports what the transport does (every feature, and rewinds on
// HandBack, unless WithMemoryFeatures narrowed them).
func (t *InMemoryTransport) Features() driver.Features { return t.features }

// Send stores out as a broker would (see InMemoryTransport). driver.IntentRetry
// waits the delay of its tier when tiers are configured, else goes to the
// tail of its queue; with SettlesRetry (WithMemoryFeatures) the original
// is acknowledged in the same step. A write the features rule out loses
// what they rule out (keys, headers) or, for a delay, fails with
// driver.ErrDelayUnsupported.
func (t *InMemoryTransport) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	return t.send(out, t.features)
}

// send is Send under the features f.
func (t *InMemoryTransport) send(out *driver.Outgoing, f driver.Features) (driver.Receipt, error) {
	if out == nil {
		return driver.Receipt{}, fmt.Errorf("babelqueue: in-memory send: nil message")
	}
	if err := t.check(out.Intent.String(), out.Queue); err != nil {
		return driver.Receipt{}, err
	}
	if t.maxBytes > 0 && len(out.Body) > t.maxBytes {
		return driver.Receipt{}, fmt.Errorf("babelqueue: in-memory %s %s: %d bytes, the limit is %d: %w",
			out.Intent, out.Queue, len(out.Body), t.maxBytes, driver.ErrTooLarge)
	}
	key := out.Key
	if key == nil {
		key = t.keyOf(out.From)
	}
	if !f.Keys {
		key = nil
	}
	extra := out.Headers
	if !f.Headers {
		extra = nil
	}
	o := *out
	o.Headers = extra
	headers := headerMap(driver.OutgoingHeaders(&o))
	var due time.Time
	var r driver.Receipt
	switch out.Intent {
	case driver.IntentPublish:
		if out.Delay > 0 {
			if !f.Delay {
				return driver.Receipt{}, fmt.Errorf("babelqueue: in-memory publish to %s: %w", out.Queue, driver.ErrDelayUnsupported)
			}
			due, r.Delay = t.clock.Now().Add(out.Delay), out.Delay
		}
	case driver.IntentRetry:
		if len(t.tiers) > 0 {
			r.Delay = t.tiers[min(max(out.Attempt, 0), len(t.tiers)-1)]
			due = t.clock.Now().Add(r.Delay)
		}
		if f.SettlesRetry {
			return r, t.retrySettling(out, headers, key, due)
		}
	}
	m := newMemMessage(out.Body, headers, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.enqueueLocked(out.Queue, m, due)
	return r, nil
}

// Publish stores body on queue with the contract headers projected from
// it: Send of driver.IntentPublish.
func (t *InMemoryTransport) Publish(ctx context.Context, queue, body string) error {
	_, err := t.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body})
	return err
}

// PublishKeyed writes a new message with a key and out-of-band headers. It
// stands for a producer in another service that sets keys.
func (t *InMemoryTransport) PublishKeyed(ctx context.Context, queue string, key []byte, body string, headers map[string]string) error {
	if key == nil {
		key = []byte{}
	}
	_, err := t.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Key: key, Headers: headers})
	return err
}

// retrySettling acknowledges the reserved From and stores its retry copy
// in one step.
func (t *InMemoryTransport) retrySettling(out *driver.Outgoing, headers map[string]string, key []byte, due time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, q, err := t.reservedLocked("retry", out.From)
	if err != nil {
		return err
	}
	settleLocked(q, h.m)
	t.enqueueLocked(out.Queue, newMemMessage(out.Body, headers, key), due)
	return nil
}

// Receive reserves the next visible message of queue (the driver.Transport
// contract's receive); see Pop.
func (t *InMemoryTransport) Receive(ctx context.Context, queue string, timeout time.Duration) (*driver.ReceivedMessage, error) {
	return t.Pop(ctx, queue, timeout)
}

// Pop reserves the next visible message of queue, waiting at most timeout
// for one. It returns (nil, nil) when none came in time, and ctx.Err()
// when ctx ended first.
func (t *InMemoryTransport) Pop(ctx context.Context, queue string, timeout time.Duration) (*driver.ReceivedMessage, error) {
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
		if err := t.check("Receive", queue); err != nil {
			return nil, err
		}
		t.mu.Lock()
		now := t.clock.Now()
		q := t.queueLocked(queue)
		t.promoteLocked(q, now)
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
		var timer driver.Timer
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

var _ driver.PartitionReadyReceiver = (*InMemoryTransport)(nil)

// ReceiveReadyFrom reserves, without waiting, the next visible message of
// partition of queue, ahead of the other partitions' messages
// (driver.PartitionReadyReceiver). That is the first one of that partition
// in the queue's order, as a Kafka consumer reads each partition on its
// own. It returns (nil, false) when the partition has none, or when the
// transport is closed or a fault (SetFault, op "Receive") refuses the
// receive.
func (t *InMemoryTransport) ReceiveReadyFrom(queue string, partition int32) (*driver.ReceivedMessage, bool) {
	if t.check("Receive", queue) != nil {
		return nil, false
	}
	t.mu.Lock()
	q := t.queueLocked(queue)
	t.promoteLocked(q, t.clock.Now())
	i := slices.IndexFunc(q.ready, func(m *memMessage) bool { return m.partition == partition })
	if i < 0 {
		t.mu.Unlock()
		return nil, false
	}
	m := q.ready[i]
	q.ready = slices.Delete(q.ready, i, i+1)
	q.reserved[m.id] = m
	t.mu.Unlock()
	return t.delivery(queue, m), true
}

// delivery builds the driver.ReceivedMessage of a reserved message, reconciling
// its attempts.
func (t *InMemoryTransport) delivery(queue string, m *memMessage) *driver.ReceivedMessage {
	body := m.body
	headers := maps.Clone(m.headers)
	if v, ok := m.headers[wire.HeaderSchemaVersion]; wire.CheckSchemaVersionHeader(v, ok) != nil {
		// A version-gated message is handed over exactly as it was
		// published: the App moves it to the dead-letter queue unchanged.
		return &driver.ReceivedMessage{Body: body, Queue: queue, Headers: headers, Key: slices.Clone(m.key), Partition: m.partition, Handle: &memHandle{t: t, queue: queue, m: m}}
	}
	hv, present := m.headers[wire.HeaderAttempts]
	rec := wire.ReconcilePulsar(m.bodyAttempts, hv, present, m.redeliveries)
	if m.hasAttempts && rec != m.bodyAttempts {
		if b, err := wire.SetAttempts([]byte(body), rec); err == nil {
			body = string(b)
		}
	}
	if present || m.redeliveries > 0 {
		if headers == nil {
			headers = make(map[string]string)
		}
		headers[wire.HeaderAttempts] = strconv.Itoa(rec)
	}
	return &driver.ReceivedMessage{Body: body, Queue: queue, Headers: headers, Key: slices.Clone(m.key), Partition: m.partition, Handle: &memHandle{t: t, queue: queue, m: m}}
}

func queueOf(msg *driver.ReceivedMessage) string {
	if msg == nil {
		return ""
	}
	return msg.Queue
}

func (t *InMemoryTransport) reservedLocked(op string, msg *driver.ReceivedMessage) (*memHandle, *memQueue, error) {
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
// back, is an error.
func (t *InMemoryTransport) Ack(ctx context.Context, msg *driver.ReceivedMessage) error {
	if err := t.check("Ack", queueOf(msg)); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, q, err := t.reservedLocked("Ack", msg)
	if err != nil {
		return err
	}
	settleLocked(q, h.m)
	t.notifyLocked()
	return nil
}

// HandBack puts a reserved message back in its place, before every later
// message of its queue, as the hand-back mode says. For a consumer reading
// one at a time that is the head. It is unchanged under
// driver.HandBackRewind (the default), with its redelivery count increased
// by one under driver.HandBackNack, and not put back at all under
// driver.HandBackNone: it then stays reserved, as on a broker that
// redelivers it later.
func (t *InMemoryTransport) HandBack(ctx context.Context, msg *driver.ReceivedMessage) error {
	return t.handBackAs(msg, t.features.HandBack)
}

// handBackAs is HandBack under mode.
func (t *InMemoryTransport) handBackAs(msg *driver.ReceivedMessage, mode driver.HandBackMode) error {
	switch mode {
	case driver.HandBackNone:
		return t.check("HandBack", queueOf(msg))
	case driver.HandBackNack:
		return t.handBack("HandBack", msg, 1)
	default:
		return t.handBack("HandBack", msg, 0)
	}
}

func (t *InMemoryTransport) handBack(op string, msg *driver.ReceivedMessage, redelivered int) error {
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
	// Back to its place: before every later message of the queue.
	i := sort.Search(len(q.ready), func(i int) bool { return q.ready[i].seq > h.m.seq })
	q.ready = slices.Insert(q.ready, i, h.m)
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

// Acked returns how many messages of queue were acknowledged (by Ack, or
// by a Send of driver.IntentRetry that settles retries).
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
// popped, reserved ones not included. The visible ones come in delivery
// order, then the delayed ones by due time.
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
			Partition:    m.partition,
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

// headerMap returns hs as a map.
func headerMap(hs []wire.Header) map[string]string {
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Key] = h.Value
	}
	return m
}

// View returns a Transport on the storage of t whose Features, writes and
// hand-backs follow f instead of t's. It stands in for a binding that
// supports less (no keys, no headers, no delay, another hand-back), to test
// an App against it.
func (t *InMemoryTransport) View(f driver.Features) driver.Transport {
	return featureView{t, f}
}

// featureView is View's Transport.
type featureView struct {
	*InMemoryTransport
	f driver.Features
}

func (v featureView) Features() driver.Features { return v.f }

func (v featureView) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	return v.send(out, v.f)
}

func (v featureView) HandBack(ctx context.Context, msg *driver.ReceivedMessage) error {
	return v.handBackAs(msg, v.f.HandBack)
}

// Committed returns the commit position of partition of queue, which
// advances only over the contiguous prefix of settled messages. It is the
// offset of the first unsettled message, or the offset the next stored
// message gets when all are settled, as a Kafka group's committed offset
// is; a partition out of range reports -1.
func (t *InMemoryTransport) Committed(queue string, partition int) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if partition < 0 || partition >= t.partitions {
		return -1
	}
	q := t.queueLocked(queue)
	p := &q.parts[partition]
	low := p.next
	for off := range p.open {
		low = min(low, off)
	}
	return low
}
