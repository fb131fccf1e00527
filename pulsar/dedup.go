package pulsar

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// WithDeduplication makes every producer of the Transport one the broker
// deduplicates, so a message App.Republish writes again is stored once. The
// producer carries the stable name producerName (a retry producer built
// from another client: producerName + "-retry"), every message an explicit
// sequence id, and a message written again the sequence id of its first
// write, so that the broker drops the second copy when the first was
// stored. The broker must deduplicate the topic: set
// brokerDeduplicationEnabled=true, or enable it for the namespace
// (pulsar-admin namespaces set-deduplication <tenant>/<ns> --enable) or the
// topic. One producer name belongs to one process at a time: the broker
// refuses a second producer of that name on a topic.
//
// Also with it: a message is never given up by the client (SendTimeout is
// disabled), so a publish whose wait ended is still written, in order,
// once the broker is back; and a keyless message goes to the partition its
// meta.id hashes to (a keyed one to its key's, as before), so that a
// republished copy reaches the partition that deduplicates it.
//
// What it promises: a message republished while its Transport is open is
// stored once. What it cannot: after the process (or the Transport) ended,
// the sequence of a pending message is gone; a caller that publishes the
// envelope again through a new Transport may store it twice, under one
// meta.id.
func WithDeduplication(producerName string) Option {
	return func(c *config) {
		if wire.IsBlank(producerName) {
			c.fail("deduplication producer name is blank")
			return
		}
		c.dedupName = producerName
	}
}

// unknownSequencesCap bounds how many unknown outcomes a producer keeps the
// sequence ids of, for their republish. Beyond it the oldest is forgotten:
// its republish gets a new sequence id and may store a second copy.
const unknownSequencesCap = 1 << 16

// asyncProducer is the part of pulsar.Producer a deduplicating producer
// needs beyond Send.
type asyncProducer interface {
	producer
	SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, callback func(pulsar.MessageID, *pulsar.ProducerMessage, error))
	LastSequenceID() int64
}

// dedupProducer numbers the messages of one producer. Sequence ids rise in
// the order the messages enter the client's queue (both under mu), so the
// broker, which drops a sequence id at or below the highest it stored for
// the producer name, drops only real resends.
type dedupProducer struct {
	p asyncProducer

	mu      sync.Mutex
	next    int64
	unknown map[string]int64 // meta.id -> sequence id of a write whose outcome is unknown
	order   []string         // keys of unknown, oldest first (bounded by unknownSequencesCap)
}

// newDedupProducer starts the sequence above what the broker stored for
// the name (LastSequenceID) and above now in nanoseconds, so that a
// restarted process, whose producer may not learn the broker's last id for
// every partition, never reuses a stored one.
func newDedupProducer(p asyncProducer, now time.Time) *dedupProducer {
	return &dedupProducer{p: p, next: max(now.UnixNano(), p.LastSequenceID()+1), unknown: make(map[string]int64)}
}

func (d *dedupProducer) Close() { d.p.Close() }

// Send writes msg with a sequence id: the one of its meta.id's unknown
// outcome when there is one, else the next. An error after the message
// entered the client's queue wraps babelqueue.ErrPublishUnknown and keeps
// its sequence id for the republish; an error before it means nothing was
// written.
func (d *dedupProducer) Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	id := msg.Properties[wire.HeaderMessageID]
	type result struct {
		id  pulsar.MessageID
		err error
	}
	done := make(chan result, 1)
	d.mu.Lock()
	seq, again := d.unknown[id]
	if !again || id == "" {
		seq = d.next
		d.next++
	}
	msg.SequenceID = &seq
	d.p.SendAsync(ctx, msg, func(mid pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
		done <- result{mid, err}
	})
	// A callback that already ran was called inside SendAsync, which
	// refuses a message (closed producer, ended context, full queue) before
	// queueing it; a queued one is answered after a broker round trip.
	select {
	case r := <-done:
		d.mu.Unlock()
		if r.err != nil {
			return nil, fmt.Errorf("refused before it was queued (sequence %d): %w", seq, r.err)
		}
		d.settled(id)
		return r.id, nil
	default:
	}
	d.mu.Unlock()
	select {
	case r := <-done:
		if r.err == nil {
			d.settled(id)
			return r.id, nil
		}
		d.remember(id, seq)
		return nil, fmt.Errorf("%w: sequence %d: %w", driver.ErrPublishUnknown, seq, r.err)
	case <-ctx.Done():
		d.remember(id, seq)
		return nil, fmt.Errorf("%w: sequence %d still queued in the client: %w", driver.ErrPublishUnknown, seq, ctx.Err())
	}
}

// remember keeps seq as the sequence id of id's next write.
func (d *dedupProducer) remember(id string, seq int64) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.unknown[id]; !ok {
		d.order = append(d.order, id)
	}
	d.unknown[id] = seq
	for len(d.order) > unknownSequencesCap {
		delete(d.unknown, d.order[0])
		d.order = d.order[1:]
	}
}

// settled forgets the unknown outcome of id: a write of it was stored.
func (d *dedupProducer) settled(id string) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.unknown[id]; ok {
		delete(d.unknown, id)
		d.order = slices.DeleteFunc(d.order, func(k string) bool { return k == id })
	}
}

// dedupOptions sets what deduplication needs on the producer options of
// name.
func dedupOptions(opts *pulsar.ProducerOptions, name string) {
	opts.Name = name
	opts.SendTimeout = -1
	opts.MessageRouter = routeByKeyOrID
}

// routeByKeyOrID places a message on the partition of its ordering key, or
// of its key (as the client's default router, JavaStringHash), or else of
// its meta.id, so that a republished copy reaches the same partition.
func routeByKeyOrID(msg *pulsar.ProducerMessage, md pulsar.TopicMetadata) int {
	n := md.NumPartitions()
	if n <= 1 {
		return 0
	}
	key := msg.OrderingKey
	if key == "" {
		key = msg.Key
	}
	if key == "" {
		key = msg.Properties[wire.HeaderMessageID]
	}
	if key == "" {
		h := fnv.New32a()
		_, _ = h.Write(msg.Payload)
		return int(h.Sum32() % n)
	}
	return int(javaStringHash(key) % n)
}

// javaStringHash is Java's String.hashCode over bytes, the client's default
// key hash.
func javaStringHash(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h = 31*h + uint32(s[i])
	}
	return h
}

// errNoAsync is returned when deduplication is asked of a producer that
// cannot send asynchronously (a fake, or a retry producer given by the
// caller that is not a pulsar.Producer).
var errNoAsync = errors.New("pulsar: deduplication needs a pulsar.Producer (SendAsync, LastSequenceID)")

// deduplicating wraps p, a producer created with dedupOptions, as a
// dedupProducer; it closes p and fails when p cannot send asynchronously.
func deduplicating(p producer) (producer, error) {
	a, ok := p.(asyncProducer)
	if !ok {
		p.Close()
		return nil, errNoAsync
	}
	return newDedupProducer(a, time.Now()), nil
}
