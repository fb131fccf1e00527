package pulsar

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

const (
	// prefetchBatch bounds how many messages a feeder takes from its
	// receive channel at once: what the channel holds when the feeder
	// reads it, up to this many.
	prefetchBatch = 16
	// prefetchDepth bounds the prepared deliveries a queue's prefetcher
	// holds beyond the client's own receiver queues: its feeders share it
	// equally, each at least prefetchBatch/2 (feederShare), and share it
	// anew when a partition's feeder joins (addPartitionFeeders).
	prefetchDepth = 96
)

// prefetcher serves a queue's Pops from the client's receive channels, in
// one of two modes, and keeps each partition's order: Pop calls one after
// another get a partition's messages in the order the client received
// them.
//
// With one receive channel (the consumer of a topic, or of all the
// partitions of a partitioned topic) it starts direct: Pop itself takes
// the next message from the channel on the consume loop's goroutine, as a
// raw Receive does, and the App decodes the body when it handles it. A
// sequential consume loop stays in this mode: a goroutine between the
// client and the loop costs more CPU per message in hand-offs and
// wake-ups than the decoding it moves aside (see DESIGN.md).
//
// The App's concurrent loop asks for ready announcements (NotifyReady),
// which switches it to prefetching for good; a prefetcher of one consumer
// per partition (partitionConsumers) prefetches from the start. A feeder
// goroutine per receive channel takes the messages and prepares them ahead
// of Pop, the attempts rule (received) and the decoding of the body the
// App would do first (babelqueue.ReceivedMessage.Predecode), so that the
// workers are left with the handler and the acknowledgement. It files
// them by partition, a batch of what the client had ready at a time, so
// that the goroutines wake each other once per batch rather than once per
// message, and holds at most its share of prefetchDepth: a feeder whose
// share is full waits, the others read on.
//
// Pop and ReceiveReady hand out across the partitions in turn (the
// partition handed out least recently first); takeFrom hands out one
// partition's next delivery (pulsar/DESIGN.md, "Receive").
//
// A prepared delivery is still only received: until Pop hands it out and
// it is acknowledged, it is as unsettled as one in the client's receiver
// queue, and the broker redelivers it when the consumer closes. The
// Transport owns the goroutines and stops them (halt) before it closes the
// consumer.
type prefetcher struct {
	in    <-chan pulsar.ConsumerMessage // the receive channel of direct mode (one feeder)
	queue string
	group string
	slot  *consumerSlot
	feed  []*feeder

	stop chan struct{} // closed by halt
	done chan struct{} // closed when every feeder has returned, or by halt when none ran
	once sync.Once
	live atomic.Int32 // feeders not returned yet

	// avail gets a token after a feeder filed deliveries (and after a
	// hand-out that left some while Pops wait); a waiting Pop then takes
	// again.
	avail chan struct{}

	// mode guards the switch to prefetching: a direct Pop receives with it
	// read-locked, start and halt take it to switch. running is set once
	// the feeders are started, and never reset.
	mode    sync.RWMutex
	running atomic.Bool

	// Under mu: the held deliveries of each partition seen (parts), the
	// partitions holding any, in the order they came to hold one
	// (active), how many are held in all (total), and a counter of
	// hand-outs (handed).
	mu     sync.Mutex
	parts  map[int32]*heldPartition
	active []*heldPartition
	total  int
	handed uint64

	// waiting counts the Pops waiting for a delivery (popPrepared);
	// notify, when set (Transport.NotifyReady), is called after a feeder
	// filed deliveries while none waits.
	waiting atomic.Int32
	notify  atomic.Pointer[func()]
}

// feeder reads one receive channel of the client for a prefetcher.
type feeder struct {
	in    <-chan pulsar.ConsumerMessage
	c     consumer // acknowledges what in delivers
	part  int32    // the partition of every message of in; -1: the message ID's
	share int      // bound of held
	room  chan struct{}

	// Under the prefetcher's mu: the deliveries filed and not handed out
	// yet, and whether the feeder waits for one of them to be handed out.
	held    int
	stalled bool
}

// heldPartition holds one partition's prepared deliveries, in order.
type heldPartition struct {
	items []*babelqueue.ReceivedMessage // items[head:] are held
	head  int
	src   *feeder // the feeder that filed them
	// turn is the prefetcher's handed count when a delivery of this
	// partition was last handed out (0: never).
	turn   uint64
	active bool
}

func (h *heldPartition) len() int { return len(h.items) - h.head }

// push appends rm behind the partition's held deliveries.
func (h *heldPartition) push(rm *babelqueue.ReceivedMessage) {
	if h.head > 0 && len(h.items) == cap(h.items) {
		n := copy(h.items, h.items[h.head:])
		clear(h.items[n:])
		h.items, h.head = h.items[:n], 0
	}
	h.items = append(h.items, rm)
}

// pop removes and returns the partition's first held delivery; h holds
// one.
func (h *heldPartition) pop() *babelqueue.ReceivedMessage {
	rm := h.items[h.head]
	h.items[h.head] = nil
	h.head++
	if h.head == len(h.items) {
		h.items, h.head = h.items[:0], 0
	}
	return rm
}

// startPrefetch returns the prefetcher of queue's consumer slot s, which
// reads in, the receive channel of s's consumer. It starts in direct
// mode: its feeder starts only when start is called.
func startPrefetch(queue, group string, s *consumerSlot, in <-chan pulsar.ConsumerMessage) *prefetcher {
	var c consumer
	if s != nil {
		c = s.c
	}
	return newPrefetcher(queue, group, s, []*feeder{{in: in, c: c, part: -1}})
}

// startPartitionPrefetch returns the prefetcher of queue's consumer slot
// s, whose consumer pc holds one consumer per partition; it prefetches at
// once, a feeder per partition.
func startPartitionPrefetch(queue, group string, s *consumerSlot, pc *partitionConsumers) *prefetcher {
	p := newPrefetcher(queue, group, s, partitionFeeders(0, pc.list()))
	p.start()
	return p
}

// partitionFeeders returns the feeders of cs, the consumers of partitions
// first, first+1, and so on.
func partitionFeeders(first int, cs []consumer) []*feeder {
	feed := make([]*feeder, len(cs))
	for i, c := range cs {
		feed[i] = &feeder{in: c.(messageChan).Chan(), c: c, part: int32(first + i), room: make(chan struct{}, 1)}
	}
	return feed
}

// feederShare is the share of prefetchDepth each of n feeders holds at
// most: an equal part, at least prefetchBatch/2.
func feederShare(n int) int { return max(prefetchDepth/n, prefetchBatch/2) }

// addPartitionFeeders starts a feeder for each of cs, the consumers of
// partitions first, first+1, and so on, added to the topic after p
// started, and shares prefetchDepth anew among all the feeders (a feeder
// above its new share reads again once its held deliveries are handed out
// below it). It reports false, having started none, when p was halted or
// its feeders have all returned.
func (p *prefetcher) addPartitionFeeders(first int, cs []consumer) bool {
	p.mode.Lock()
	defer p.mode.Unlock()
	select {
	case <-p.stop:
		return false
	default:
	}
	if !p.running.Load() {
		return false
	}
	for {
		n := p.live.Load()
		if n == 0 {
			return false // done is closed: no feeder may start
		}
		if p.live.CompareAndSwap(n, n+int32(len(cs))) {
			break
		}
	}
	feed := partitionFeeders(first, cs)
	p.mu.Lock()
	p.feed = append(p.feed, feed...)
	share := feederShare(len(p.feed))
	for _, f := range p.feed {
		f.share = share
	}
	p.mu.Unlock()
	for _, f := range feed {
		go p.run(f)
	}
	return true
}

func newPrefetcher(queue, group string, s *consumerSlot, feed []*feeder) *prefetcher {
	share := feederShare(len(feed))
	for _, f := range feed {
		f.share = share
		f.room = make(chan struct{}, 1)
	}
	return &prefetcher{
		in:    feed[0].in,
		queue: queue,
		group: group,
		slot:  s,
		feed:  feed,
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		avail: make(chan struct{}, 1),
		parts: make(map[int32]*heldPartition),
	}
}

// start switches p to prefetching: its feeders start, unless they run
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
	p.live.Store(int32(len(p.feed)))
	for _, f := range p.feed {
		go p.run(f)
	}
}

// run is the feeder f: it takes the messages from f's receive channel,
// prepares them and files them by partition, while f holds less than its
// share, until the channel closes or halt stops it.
func (p *prefetcher) run(f *feeder) {
	defer func() {
		if p.live.Add(-1) == 0 {
			close(p.done)
		}
	}()
	batch := make([]*babelqueue.ReceivedMessage, 0, prefetchBatch)
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		p.mu.Lock()
		room := f.share - f.held
		f.stalled = room <= 0
		p.mu.Unlock()
		if room <= 0 {
			select {
			case <-f.room:
			case <-p.stop:
				return
			}
			continue
		}
		// A message already waiting is taken without the two-way select
		// (which locks both channels); the select is for an empty channel.
		var cm pulsar.ConsumerMessage
		var open bool
		select {
		case cm, open = <-f.in:
		default:
			select {
			case cm, open = <-f.in:
			case <-p.stop:
				return
			}
		}
		if !open {
			return
		}
		batch = batch[:0]
		if cm.Message != nil {
			batch = append(batch, p.prepare(f, cm.Message))
		}
	more:
		for len(batch) < min(room, prefetchBatch) {
			select {
			case cm, open = <-f.in:
				if !open {
					break more
				}
				if cm.Message != nil {
					batch = append(batch, p.prepare(f, cm.Message))
				}
			default:
				break more
			}
		}
		if len(batch) > 0 {
			p.file(f, batch)
			clear(batch)
			select {
			case p.avail <- struct{}{}:
			default:
			}
			// Filed with no Pop waiting, deliveries are announced; a Pop
			// that starts waiting meanwhile finds the avail token.
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

// prepare is prepared for a message f received.
func (p *prefetcher) prepare(f *feeder, m pulsar.Message) *babelqueue.ReceivedMessage {
	rm, admitted := receivedFrom(p.queue, f.c, p.topic(), f.part, m, p.group)
	if admitted {
		rm.Predecode()
	}
	return rm
}

func (p *prefetcher) topic() string {
	if p.slot == nil {
		return ""
	}
	return p.slot.topic
}

// file appends batch, which f prepared, to the held deliveries of each
// message's partition, in order.
func (p *prefetcher) file(f *feeder, batch []*babelqueue.ReceivedMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rm := range batch {
		h := p.parts[rm.Partition]
		if h == nil {
			h = &heldPartition{src: f}
			p.parts[rm.Partition] = h
		}
		h.src = f
		h.push(rm)
		if !h.active {
			h.active = true
			p.active = append(p.active, h)
		}
	}
	p.total += len(batch)
	f.held += len(batch)
}

// take returns the next prepared delivery when one is held, without
// waiting: the first held delivery of the partition handed out least
// recently (a partition never handed out first, in the order the
// partitions came to hold one). With one partition, that is the receive
// order.
func (p *prefetcher) take() (*babelqueue.ReceivedMessage, bool) {
	p.mu.Lock()
	if len(p.active) == 0 {
		p.mu.Unlock()
		return nil, false
	}
	best := 0
	for i, h := range p.active {
		if h.turn < p.active[best].turn {
			best = i
		}
		if h.turn == 0 {
			best = i
			break
		}
	}
	return p.handOutLocked(p.active[best], best), true
}

// takeFrom returns the first prepared delivery of partition part, ahead of
// the other partitions' deliveries (each partition keeps its order), when
// the prefetcher runs and holds one. It never waits.
func (p *prefetcher) takeFrom(part int32) (*babelqueue.ReceivedMessage, bool) {
	if !p.running.Load() {
		return nil, false
	}
	p.mu.Lock()
	h := p.parts[part]
	if h == nil || h.len() == 0 {
		p.mu.Unlock()
		return nil, false
	}
	return p.handOutLocked(h, slices.Index(p.active, h)), true
}

// handOutLocked removes and returns h's first held delivery, records h's
// turn and unlocks p.mu; h holds one and is p.active[i]. It then sends
// the tokens the hand-out calls for: room when h's feeder waits for it,
// avail when deliveries are left and Pops wait.
func (p *prefetcher) handOutLocked(h *heldPartition, i int) *babelqueue.ReceivedMessage {
	rm := h.pop()
	p.total--
	p.handed++
	h.turn = p.handed
	if h.len() == 0 {
		h.active = false
		p.active = slices.Delete(p.active, i, i+1)
	}
	f := h.src
	f.held--
	stalled, left := f.stalled, p.total > 0
	f.stalled = false
	p.mu.Unlock()
	if stalled {
		select {
		case f.room <- struct{}{}:
		default:
		}
	}
	if left && p.waiting.Load() > 0 {
		select {
		case p.avail <- struct{}{}:
		default:
		}
	}
	return rm
}

// held returns how many prepared deliveries p holds.
func (p *prefetcher) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total
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

// halt stops the prefetcher and waits until its feeders, if they ever
// started, have returned; a direct Pop waiting returns. The deliveries it
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
