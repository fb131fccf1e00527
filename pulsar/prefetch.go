package pulsar

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

const (
	// prefetchBatch bounds how many prepared deliveries the prefetcher
	// hands to Pop at once: what the client's receive channel holds when
	// the prefetcher reads it, up to this many.
	prefetchBatch = 16
	// prefetchBatches bounds how many batches wait for Pop. With the batch
	// Pop is working through and the one being prepared, a queue's
	// prefetcher holds at most (prefetchBatches + 2) × prefetchBatch
	// deliveries beyond the client's own receiver queue.
	prefetchBatches = 4
)

// prefetcher serves a queue's Pops from the client's receive channel, in
// one of two modes, and keeps each partition's order: Pop calls one after
// another get a partition's messages in the order the client received
// them.
//
// It starts direct: Pop itself takes the next message from the channel on
// the consume loop's goroutine, as a raw Receive does, and the App decodes
// the body when it handles it. A sequential consume loop stays in this
// mode: a goroutine between the client and the loop costs more CPU per
// message in hand-offs and wake-ups than the decoding it moves aside (see
// DESIGN.md).
//
// The App's concurrent loop asks for ready announcements (NotifyReady),
// which switches it to prefetching for good: a goroutine of its own takes
// the messages from the channel and prepares them ahead of Pop, the
// attempts rule (received) and the decoding of the body the App would do
// first (babelqueue.ReceivedMessage.Predecode), so that the workers are left
// with the handler and the acknowledgement. It hands them over in batches
// of what the client had ready, so that the goroutines wake each other once
// per batch rather than once per message.
//
// Once it has prepared messages of more than one partition (mixed), it
// hands them out across the partitions in turn: each Pop (and ReceiveReady)
// gets the first held delivery of the partition it handed out least
// recently, looking through the ready batches too, up to
// maxHeldForPartition deliveries held. The client's channel may begin with
// a long run of one partition's messages (each partition consumer of the
// client feeds it on its own); handed out in that order, they would fill
// the App's pending bound with one partition while the others wait for
// the receive order to get past the run (pulsar/DESIGN.md, "Receive").
//
// A prepared delivery is still only received: until Pop hands it out and
// it is acknowledged, it is as unsettled as one in the client's receiver
// queue, and the broker redelivers it when the consumer closes. The
// Transport owns the goroutine and stops it (halt) before it closes the
// consumer.
type prefetcher struct {
	in    <-chan pulsar.ConsumerMessage // the client's receive channel
	queue string
	group string
	slot  *consumerSlot

	ready chan []*babelqueue.ReceivedMessage // prepared batches, in order, never empty
	stop  chan struct{}                      // closed by halt
	done  chan struct{}                      // closed when run has returned, or by halt when it never ran
	once  sync.Once

	// mode guards the switch to prefetching: a direct Pop receives with it
	// read-locked, start and halt take it to switch. running is set once
	// the goroutine is started, and never reset.
	mode    sync.RWMutex
	running atomic.Bool

	mu   sync.Mutex
	held []*babelqueue.ReceivedMessage // taken from ready, not yet handed out, in order

	// mixed is set by run once it prepared deliveries of two partitions.
	// Under mu, turns[part] is the value of handed when a delivery of
	// partition part was last handed out (0: never), for the partitions
	// below maxTurnPartitions.
	mixed  atomic.Bool
	turns  []uint64
	handed uint64

	// waiting counts the Pops waiting for a batch (popPrepared); notify,
	// when set (Transport.NotifyReady), is called after a batch is queued
	// while none waits.
	waiting atomic.Int32
	notify  atomic.Pointer[func()]
}

// startPrefetch returns the prefetcher of queue's consumer slot s, which
// reads in, the client's receive channel. It starts in direct mode: its
// goroutine starts only when start is called.
func startPrefetch(queue, group string, s *consumerSlot, in <-chan pulsar.ConsumerMessage) *prefetcher {
	return &prefetcher{
		in:    in,
		queue: queue,
		group: group,
		slot:  s,
		ready: make(chan []*babelqueue.ReceivedMessage, prefetchBatches),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
}

// start switches p to prefetching: its goroutine starts, unless it runs
// already or p was halted. A direct Pop in progress finishes first.
func (p *prefetcher) start() {
	if p.running.Load() {
		return
	}
	p.mode.Lock()
	defer p.mode.Unlock()
	if p.running.Load() {
		return
	}
	select {
	case <-p.stop:
		return
	default:
	}
	p.running.Store(true)
	go p.run(p.queue, p.group, p.slot, p.in)
}

func (p *prefetcher) run(queue, group string, s *consumerSlot, in <-chan pulsar.ConsumerMessage) {
	defer close(p.done)
	first, mixed := int32(-1), false
	saw := func(rm *babelqueue.ReceivedMessage) *babelqueue.ReceivedMessage {
		if !mixed {
			if first < 0 {
				first = rm.Partition
			} else if rm.Partition != first {
				mixed = true
				p.mixed.Store(true)
			}
		}
		return rm
	}
	for {
		// A message already waiting is taken without the two-way select
		// (which locks both channels); the select is for an empty channel.
		var cm pulsar.ConsumerMessage
		var open bool
		select {
		case cm, open = <-in:
		default:
			select {
			case cm, open = <-in:
			case <-p.stop:
				return
			}
		}
		if !open {
			return
		}
		batch := make([]*babelqueue.ReceivedMessage, 0, prefetchBatch)
		if cm.Message != nil {
			batch = append(batch, saw(prepared(queue, group, s, cm.Message)))
		}
	more:
		for len(batch) < prefetchBatch {
			select {
			case cm, open = <-in:
				if !open {
					break more
				}
				if cm.Message != nil {
					batch = append(batch, saw(prepared(queue, group, s, cm.Message)))
				}
			default:
				break more
			}
		}
		if len(batch) > 0 {
			select {
			case p.ready <- batch:
			default:
				select {
				case p.ready <- batch:
				case <-p.stop:
					return
				}
			}
			// Queued after the count was read by a Pop that then timed
			// out, a batch is still taken by the next Pop; queued with no
			// Pop waiting, it is announced.
			if p.waiting.Load() == 0 {
				if fn := p.notify.Load(); fn != nil {
					(*fn)()
				}
			}
		}
		if !open {
			return
		}
	}
}

// prepared is received, with the body decoded for the App unless the
// version gate rejects the message by its property (it is then never
// decoded).
func prepared(queue, group string, s *consumerSlot, m pulsar.Message) *babelqueue.ReceivedMessage {
	rm, admitted := received(queue, s, m, group)
	if admitted {
		rm.Predecode()
	}
	return rm
}

// take returns the next prepared delivery when one is ready, without
// waiting.
func (p *prefetcher) take() (*babelqueue.ReceivedMessage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) == 0 {
		select {
		case b := <-p.ready:
			p.held = b
		default:
			return nil, false
		}
	}
	return p.nextLocked(), true
}

// maxHeldForPartition bounds the deliveries takeFrom moves from the ready
// batches into held while it looks for one partition's next delivery.
const maxHeldForPartition = (prefetchBatches + 1) * prefetchBatch

// takeFrom returns the first prepared delivery of partition part, ahead of
// the other partitions' deliveries held before it (each partition keeps
// its order), when the prefetcher runs and holds one; it looks through
// the ready batches too, moving them into held up to
// maxHeldForPartition deliveries. It never waits.
func (p *prefetcher) takeFrom(part int32) (*babelqueue.ReceivedMessage, bool) {
	if !p.running.Load() {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 0; ; i++ {
		for ; i < len(p.held); i++ {
			if rm := p.held[i]; rm.Partition == part {
				p.removeLocked(i)
				return rm, true
			}
		}
		if len(p.held) >= maxHeldForPartition {
			return nil, false
		}
		select {
		case b := <-p.ready:
			p.held = append(p.held, b...)
		default:
			return nil, false
		}
	}
}

// takeReady is take in either mode: in direct mode, the next message the
// client's receive channel already holds, if any (the caller then decodes
// it); a closed channel holds none.
func (p *prefetcher) takeReady() (*babelqueue.ReceivedMessage, bool) {
	if !p.running.Load() {
		p.mode.RLock()
		defer p.mode.RUnlock()
		if !p.running.Load() {
			for {
				select {
				case cm, open := <-p.in:
					rm, closed := p.fromChannel(cm, open)
					if closed {
						return nil, false
					}
					if rm != nil {
						return rm, true
					}
				default:
					return nil, false
				}
			}
		}
	}
	return p.take()
}

// fromChannel is a direct-mode take of what the client's receive channel
// gave: the delivery of its message, nil for an empty consumer message
// (passed over), or closed when the channel is closed.
func (p *prefetcher) fromChannel(cm pulsar.ConsumerMessage, open bool) (rm *babelqueue.ReceivedMessage, closed bool) {
	if !open {
		return nil, true
	}
	if cm.Message == nil {
		return nil, false
	}
	rm, _ = received(p.queue, p.slot, cm.Message, p.group)
	return rm, false
}

// got is take for a batch b that a waiting Pop received from ready: it
// goes behind what is still held, and the next delivery is returned.
func (p *prefetcher) got(b []*babelqueue.ReceivedMessage) *babelqueue.ReceivedMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = append(p.held, b...)
	return p.nextLocked()
}

// maxTurnPartitions bounds the partitions whose turn the prefetcher keeps;
// a delivery of a partition at or beyond it counts as never handed out.
const maxTurnPartitions = 1 << 12

// nextLocked removes and returns the held delivery to hand out next: the
// first one until run has seen two partitions; then the first delivery of
// the partition handed out least recently (never comes first, then the
// receive order), after moving the ready batches into held up to
// maxHeldForPartition deliveries. p.mu is held and held is not empty.
func (p *prefetcher) nextLocked() *babelqueue.ReceivedMessage {
	if !p.mixed.Load() {
		rm := p.held[0]
		p.removeLocked(0)
		return rm
	}
	for len(p.held) < maxHeldForPartition {
		select {
		case b := <-p.ready:
			p.held = append(p.held, b...)
			continue
		default:
		}
		break
	}
	// Every delivery of one partition has the same turn, so the first one
	// is kept: the partition's order holds.
	best, bestTurn := 0, ^uint64(0)
	for i, rm := range p.held {
		if t := p.turnLocked(rm.Partition); t < bestTurn {
			best, bestTurn = i, t
			if t == 0 {
				break
			}
		}
	}
	rm := p.held[best]
	p.removeLocked(best)
	return rm
}

// turnLocked returns when a delivery of partition part was last handed
// out (0: never). p.mu is held.
func (p *prefetcher) turnLocked(part int32) uint64 {
	if i := int(part); i >= 0 && i < len(p.turns) {
		return p.turns[i]
	}
	return 0
}

// removeLocked removes held delivery i, which is being handed out, and
// records its partition's turn. p.mu is held.
func (p *prefetcher) removeLocked(i int) {
	part := int(p.held[i].Partition)
	if i == 0 {
		p.held[0] = nil
		p.held = p.held[1:]
	} else {
		p.held = slices.Delete(p.held, i, i+1)
	}
	if part < 0 || part >= maxTurnPartitions {
		return
	}
	if part >= len(p.turns) {
		p.turns = append(p.turns, make([]uint64, part+1-len(p.turns))...)
	}
	p.handed++
	p.turns[part] = p.handed
}

// halt stops the prefetcher and waits until its goroutine, if it ever
// started, has returned; a direct Pop waiting returns. The deliveries it
// held are dropped unsettled, for the broker to deliver again once the
// consumer is closed. Safe to call more than once.
func (p *prefetcher) halt() {
	p.once.Do(func() {
		close(p.stop)
		p.mode.Lock()
		if !p.running.Load() {
			close(p.done)
		}
		p.mode.Unlock()
	})
	<-p.done
}
