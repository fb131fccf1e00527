package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// memberReader consumes one queue as a member of the transport's consumer
// group, through kafka-go's ConsumerGroup and its generations, which say
// when partitions are revoked (the group Reader hides it). Per generation
// it runs one fetcher per assigned partition; each fetcher feeds its
// partition's FIFO and Receive takes from them in turn, one record per
// partition, within the transport's record budget (so a consumer running
// many keys at once sees all partitions' keys early, not one partition's
// run after another's). When the
// generation ends (a rebalance, or Close) dispatch of its partitions stops
// at once, the deliveries in flight get the revoke timeout to settle, the
// settled contiguous prefix of each partition is committed within the
// ending generation, and what is left is read again by the partition's
// next owner. DESIGN.md, "Revocation and Close", has the protocol.
type memberReader struct {
	t      *Transport
	queue  string
	group  groupMember
	budget *recordBudget

	ctx       context.Context // the run loop's; cancelled by Close
	cancel    context.CancelFunc
	done      chan struct{} // closed when the run loop returned
	closeOnce sync.Once
	closeErr  error

	deferHeaders atomic.Bool
	avail        chan struct{} // 1-buffered: a record was buffered, or the reader closed
	waiters      atomic.Int32  // receive calls waiting on avail (or about to)
	dirty        atomic.Bool   // a settlement moved a prefix since the last commit
	backlog      atomic.Int64  // buffered, read by the fetchers without the lock

	mu       sync.Mutex
	ring     []*assignment       // the assignments with buffered records, in hand-out turn
	turn     int                 // the index in ring of the next one to hand out from
	buffered int                 // fetched, not handed out, over all assignments
	parts    map[int]*assignment // the live assignment of each partition of the current generation
	genCtx   context.Context     // the current generation's context
	genWG    *sync.WaitGroup     // its fetchers
	closed   bool

	// commitMu orders the commits: under it targets are read, committed
	// and recorded, so a partition's committed offset never goes down.
	commitMu sync.Mutex
}

// partitionQueue is the record queue of each partition's kafka-go reader:
// what it decodes ahead of the fetcher, besides the transport's budget.
const partitionQueue = 64

// predecodeBacklog is the number of records waiting for Receive from which
// the fetchers also decode the bodies ahead for the App.
const predecodeBacklog = 64

// idlePartitionAfter is how long a fetcher with nothing buffered waits for
// the broker before its partition counts as idle and stops sharing the
// record budget: longer than a fetch round trip of a partition with
// records (the fetch's maximum wait is 250 ms), so that the fetchers of a
// generation's first fetches all count.
const idlePartitionAfter = 500 * time.Millisecond

// fetchErrorPause spaces a fetcher's fetches after an error.
const fetchErrorPause = 100 * time.Millisecond

// groupErrorPause spaces the joins after a group error.
const groupErrorPause = 250 * time.Millisecond

// newMemberReader joins the group for queue and starts its run loop.
func newMemberReader(t *Transport, queue string, group groupMember, deferHeaders bool) *memberReader {
	ctx, cancel := context.WithCancel(context.Background())
	m := &memberReader{
		t: t, queue: queue, group: group, budget: t.budget,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		avail: make(chan struct{}, 1), parts: make(map[int]*assignment),
	}
	m.deferHeaders.Store(deferHeaders)
	go m.run()
	return m
}

// run takes the generations one after the other until Close.
func (m *memberReader) run() {
	defer close(m.done)
	for {
		gen, err := m.group.Next(m.ctx)
		if err != nil {
			if m.ctx.Err() != nil || m.isClosed() || errors.Is(err, kafkago.ErrGroupClosed) {
				return
			}
			m.t.cfg.log().Warn("kafka: consumer group error; rejoining", "queue", m.queue, "err", err)
			select {
			case <-m.ctx.Done():
				return
			case <-time.After(groupErrorPause):
			}
			continue
		}
		gen.Start(func(ctx context.Context) { m.runGeneration(ctx, gen) })
	}
}

func (m *memberReader) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// runGeneration owns one generation: it fetches the assigned partitions,
// commits periodically, and revokes them when ctx ends.
func (m *memberReader) runGeneration(ctx context.Context, gen groupGeneration) {
	var wg sync.WaitGroup
	m.mu.Lock()
	m.genCtx, m.genWG = ctx, &wg
	for _, pa := range gen.Assignments()[m.queue] {
		a := m.newAssignment(gen, pa.ID, pa.Offset)
		if pa.Offset >= 0 {
			a.committed = pa.Offset
		}
		m.parts[pa.ID] = a
		m.startFetcher(a)
		m.event("assign", pa.ID, pa.Offset)
	}
	m.mu.Unlock()
	m.commitLoop(ctx, gen)
	m.revoke(gen, &wg)
}

func (m *memberReader) newAssignment(gen groupGeneration, partition int, start int64) *assignment {
	return &assignment{m: m, gen: gen, partition: partition, start: start, settled: -1, committed: -1, drained: make(chan struct{}),
		resume: -1, room: make(chan struct{}, 1)}
}

// startFetcher starts a's fetcher under the current generation. m.mu held.
func (m *memberReader) startFetcher(a *assignment) {
	ctx, cancel := context.WithCancel(m.genCtx)
	a.cancel = cancel
	pr := a.gen.OpenPartition(m.queue, a.partition, a.start, min(partitionQueue, m.budget.maxRecords))
	// The fetcher shares the budget from its start, counted in before
	// any fetcher of the generation looks at its share (under m.mu), so
	// that the first to get records does not take all of it; it stops
	// sharing while it waits for the broker with nothing buffered (an
	// idle partition).
	a.startSharing()
	m.genWG.Add(1)
	go m.fetch(ctx, a, pr, m.genWG)
}

// fetch reads a's partition into its FIFO while a is live, taking each
// record's share of the budget first (waiting at the cap).
func (m *memberReader) fetch(ctx context.Context, a *assignment, pr partitionReader, wg *sync.WaitGroup) {
	defer wg.Done()
	defer func() { _ = pr.Close() }()
	defer a.stopSharing()
	for {
		empty, ok := m.waitShare(ctx, a)
		if !ok {
			return
		}
		var idle *time.Timer
		if empty {
			idle = time.AfterFunc(idlePartitionAfter, a.stopSharing)
		}
		msg, err := pr.FetchMessage(ctx)
		if idle != nil {
			idle.Stop()
		}
		a.startSharing()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.t.cfg.log().Warn("kafka: fetch error; retrying", "queue", m.queue, "partition", a.partition, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(fetchErrorPause):
			}
			continue
		}
		d := m.t.newDelivery(m.queue, msg)
		d.asg, d.size = a, messageSize(&msg)
		if m.budget.acquire(ctx, d.size) != nil {
			return
		}
		// Decode ahead only for the App (Receive defers the headers; Pop's
		// callers decode the body themselves, if at all) and only while
		// there is a backlog: then the consume loop is the slower side and
		// the fetcher takes work off it.
		deferred := m.deferHeaders.Load()
		prepare(d, deferred && m.backlog.Load() >= predecodeBacklog)
		if !deferred {
			d.rm.FillHeaders()
		}
		m.mu.Lock()
		if a.state != asgLive {
			m.mu.Unlock()
			m.budget.release(1, d.size)
			return
		}
		if len(a.buf) == 0 {
			m.ring = append(m.ring, a)
		}
		a.buf = append(a.buf, d)
		a.bufBytes += d.size
		m.budget.buffer(1, d.size)
		m.buffered++
		m.backlog.Store(int64(m.buffered))
		m.mu.Unlock()
		if m.waiters.Load() > 0 {
			signal(m.avail)
		}
	}
}

// waitShare waits while a's FIFO holds its share of the room the budget
// leaves for buffered records (recordBudget.share), so that the fetchers
// of the other partitions find room for theirs: a partition whose records
// are handed out one for one with the others' (the turn of Receive, a lane
// of the App per partition) keeps some buffered instead of waiting for
// room that a faster fetcher took. An empty FIFO never waits. It reports
// whether the FIFO is empty, and ok false once ctx ended.
func (m *memberReader) waitShare(ctx context.Context, a *assignment) (empty, ok bool) {
	var recheck *time.Timer
	defer func() {
		if recheck != nil {
			recheck.Stop()
		}
	}()
	for {
		m.mu.Lock()
		records, bytes := m.budget.share()
		n := len(a.buf)
		if n == 0 || n < records && a.bufBytes < bytes {
			a.resume = -1
			m.mu.Unlock()
			return n == 0, true
		}
		// Resume a quarter below the share: fetch in runs, not one
		// record per record handed out.
		a.resume = max(records-max(records/4, 1), 0)
		m.mu.Unlock()
		// The share grows when records in flight settle: look again
		// then, without a wake-up per settlement.
		if recheck == nil {
			recheck = time.NewTimer(budgetRecheck)
		} else {
			recheck.Reset(budgetRecheck)
		}
		select {
		case <-a.room:
		case <-recheck.C:
		case <-ctx.Done():
			return false, false
		}
	}
}

// shrunkLocked accounts for d leaving a's FIFO, and wakes a's fetcher when
// it waits for the FIFO to shrink (waitShare). m.mu held.
func (m *memberReader) shrunkLocked(a *assignment, d *delivery) {
	a.bufBytes -= d.size
	m.budget.buffer(-1, -d.size)
	if a.resume >= 0 && len(a.buf) <= a.resume {
		a.resume = -1
		signal(a.room)
	}
}

// messageSize is the budget share of a record: its key, value and headers.
func messageSize(msg *kafkago.Message) int64 {
	n := len(msg.Key) + len(msg.Value)
	for _, h := range msg.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// signal wakes the waiter of ch, if any, without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// receive hands out the next buffered record of a live assignment, waiting
// until ctx ends. It returns io.EOF once the reader is closed.
func (m *memberReader) receive(ctx context.Context, deferHeaders bool) (*delivery, error) {
	// Counted before the buffer is looked at: a record buffered after
	// that look signals avail (fetch).
	m.waiters.Add(1)
	defer m.waiters.Add(-1)
	for {
		if d, err := m.tryReceive(deferHeaders); d != nil || err != nil {
			return d, err
		}
		select {
		case <-m.avail:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tryReceive hands out the next buffered record of a live assignment
// without waiting: nil, nil when none is buffered. It returns
// errReaderClosed once the reader is closed.
func (m *memberReader) tryReceive(deferHeaders bool) (*delivery, error) {
	if deferHeaders && !m.deferHeaders.Load() {
		m.deferHeaders.Store(true)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errReaderClosed
	}
	for m.buffered > 0 {
		d := m.takeLocked()
		a := d.asg
		if a.state != asgLive {
			// Dropped with its assignment already; never handed out.
			m.budget.release(1, d.size)
			continue
		}
		m.handOutLocked(d)
		more := m.buffered > 0
		m.mu.Unlock()
		if more && m.waiters.Load() > 0 {
			signal(m.avail) // another Receive may take the next one
		}
		return d, nil
	}
	m.mu.Unlock()
	return nil, nil
}

// tryReceiveFrom hands out the next buffered record of partition, when
// its assignment is live and has one, without waiting and out of the
// partitions' turn: nil, nil when none is buffered. It returns
// errReaderClosed once the reader is closed.
func (m *memberReader) tryReceiveFrom(partition int) (*delivery, error) {
	if !m.deferHeaders.Load() {
		m.deferHeaders.Store(true)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errReaderClosed
	}
	a := m.parts[partition]
	if a == nil || a.state != asgLive || len(a.buf) == 0 {
		return nil, nil
	}
	d := a.buf[0]
	a.buf[0] = nil
	if len(a.buf) == 1 {
		a.buf = a.buf[:0]
		if i := slices.Index(m.ring, a); i >= 0 {
			m.ring = slices.Delete(m.ring, i, i+1)
			if i < m.turn {
				m.turn-- // the turn stays with the assignment it was at
			}
		}
	} else {
		a.buf = a.buf[1:]
	}
	m.shrunkLocked(a, d)
	m.buffered--
	m.backlog.Store(int64(m.buffered))
	m.handOutLocked(d)
	return d, nil
}

// handOutLocked enters d, taken from its live assignment's FIFO, in the
// assignment's ledger as handed out. m.mu held.
func (m *memberReader) handOutLocked(d *delivery) {
	a := d.asg
	a.out = append(a.out, outEntry{offset: d.msg.Offset, size: d.size})
	a.inflight++
	a.inflightBytes += d.size
	m.event("out", a.partition, d.msg.Offset)
}

// takeLocked takes the next record to hand out: the head of the FIFO of
// the assignment whose turn it is; the turn then passes to the next one.
// m.buffered > 0. m.mu held.
func (m *memberReader) takeLocked() *delivery {
	if m.turn >= len(m.ring) {
		m.turn = 0
	}
	a := m.ring[m.turn]
	d := a.buf[0]
	a.buf[0] = nil
	if len(a.buf) == 1 {
		a.buf = a.buf[:0] // keep the array for the next records
		m.ring = slices.Delete(m.ring, m.turn, m.turn+1)
	} else {
		a.buf = a.buf[1:]
		m.turn++
	}
	m.shrunkLocked(a, d)
	m.buffered--
	m.backlog.Store(int64(m.buffered))
	return d
}

// errReaderClosed is returned by receive once Close ran.
var errReaderClosed = errors.New("kafka: member reader closed")

// dropBuffered drops the buffered records of the assignments for which
// drop is true, giving their shares back. m.mu held.
func (m *memberReader) dropBuffered(drop func(*assignment) bool) {
	kept := m.ring[:0]
	var n int
	var bytes int64
	for _, a := range m.ring {
		if !drop(a) {
			kept = append(kept, a)
			continue
		}
		for _, d := range a.buf {
			n++
			bytes += d.size
		}
		m.budget.buffer(-len(a.buf), -a.bufBytes)
		clear(a.buf)
		a.buf, a.bufBytes = a.buf[:0], 0
	}
	clear(m.ring[len(kept):])
	m.ring = kept
	m.buffered -= n
	m.backlog.Store(int64(m.buffered))
	m.budget.release(n, bytes)
}

// ack settles d. With a commit interval the settled prefix is committed by
// the generation's commit loop (or its revocation); with 0, here.
func (m *memberReader) ack(d *delivery) error {
	m.mu.Lock()
	a := d.asg.holder(d.msg.Offset)
	if a.state == asgRetired {
		m.mu.Unlock()
		return a.cause
	}
	if err := a.settle(d.msg.Offset); err != nil {
		m.mu.Unlock()
		return err
	}
	a.inflight--
	a.inflightBytes -= d.size
	m.budget.release(1, d.size)
	a.markDrained()
	_, advanced := a.commitTarget()
	m.mu.Unlock()
	if !advanced {
		return nil
	}
	if m.t.cfg.commitInterval > 0 {
		m.dirty.Store(true)
		return nil
	}
	return m.commit(a.gen, []*assignment{a})
}

// rewind hands d back: its assignment is retired and a successor reads
// the partition again from d's offset. The deliveries below d are carried
// over to the successor, so that their acknowledgements still count; those
// at or above it are read again and their acknowledgements fail with
// errRewound. The ledger moves with them: the commit never passes an
// unsettled record, and committed offsets never go down. During a
// revocation it only stops waiting for d: the next owner reads it again.
func (m *memberReader) rewind(d *delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := d.asg.holder(d.msg.Offset)
	switch a.state {
	case asgRetired:
		return nil // read again already
	case asgDraining:
		a.inflight--
		a.inflightBytes -= d.size
		m.budget.release(1, d.size)
		a.markDrained()
		return nil
	}
	a.state, a.cause = asgRetired, errRewound
	a.cancel()
	m.dropBuffered(func(x *assignment) bool { return x == a })
	// Never re-read below the settled prefix (d settled already).
	next := m.newAssignment(a.gen, a.partition, max(d.msg.Offset, a.settled+1))
	n, bytes := a.carryBelow(next)
	m.budget.release(n, bytes)
	a.inflight, a.inflightBytes = 0, 0
	a.next = next
	m.parts[a.partition] = next
	m.startFetcher(next)
	m.dirty.Store(true) // the carried prefix
	return nil
}

// commitLoop commits the settled prefixes every commit interval until ctx
// ends. A failed commit is logged and retried at the next tick.
func (m *memberReader) commitLoop(ctx context.Context, gen groupGeneration) {
	interval := m.t.cfg.commitInterval
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !m.dirty.Swap(false) {
			continue
		}
		if err := m.commit(gen, m.liveOf(gen)); err != nil {
			m.dirty.Store(true)
			m.t.cfg.log().Warn("kafka: commit failed; retrying", "queue", m.queue, "err", err)
		}
	}
}

// liveOf returns the assignments of gen still held.
func (m *memberReader) liveOf(gen groupGeneration) []*assignment {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*assignment, 0, len(m.parts))
	for _, a := range m.parts {
		if a.gen == gen {
			out = append(out, a)
		}
	}
	return out
}

// commit commits, within gen, the settled prefix of each of asgs that
// passes what was committed. An assignment a hand-back retired commits
// through its latest successor, which carries its prefix: a late commit of
// the older prefix would take the partition's offset back. asgs is
// rewritten with the assignments committed through.
func (m *memberReader) commit(gen groupGeneration, asgs []*assignment) error {
	m.commitMu.Lock()
	defer m.commitMu.Unlock()
	offsets := make(map[int]int64, len(asgs))
	m.mu.Lock()
	for i, a := range asgs {
		for a.next != nil {
			a = a.next
		}
		asgs[i] = a
		if off, ok := a.commitTarget(); ok && a.gen == gen {
			offsets[a.partition] = off
		}
	}
	m.mu.Unlock()
	if len(offsets) == 0 {
		return nil
	}
	if err := gen.CommitOffsets(map[string]map[int]int64{m.queue: offsets}); err != nil {
		return fmt.Errorf("commit %d partition offsets of %q: %w", len(offsets), m.queue, err)
	}
	m.mu.Lock()
	for _, a := range asgs {
		if off, ok := offsets[a.partition]; ok {
			a.committed = max(a.committed, off)
		}
	}
	m.mu.Unlock()
	return nil
}

// finalCommitPause spaces the attempts of a revocation's commit.
const finalCommitPause = 100 * time.Millisecond

// revoke ends gen's assignments: dispatch stops at once, the deliveries in
// flight get the revoke timeout to settle, then acknowledgements are
// refused and the settled prefixes are committed within gen, retried for
// up to the revoke timeout.
func (m *memberReader) revoke(gen groupGeneration, wg *sync.WaitGroup) {
	m.mu.Lock()
	var asgs []*assignment
	for _, a := range m.parts {
		if a.gen == gen {
			asgs = append(asgs, a)
			a.state = asgDraining
			a.cancel()
			a.markDrained()
			m.event("revoke", a.partition, -1)
		}
	}
	m.dropBuffered(func(x *assignment) bool { return x.gen == gen })
	m.genCtx, m.genWG = nil, nil
	m.mu.Unlock()
	wg.Wait()

	timeout := m.t.cfg.revokeTimeout
	timer := time.NewTimer(timeout)
wait:
	for _, a := range asgs {
		select {
		case <-a.drained:
		case <-timer.C:
			break wait
		}
	}
	timer.Stop()

	m.mu.Lock()
	cause := ErrRevoked
	if m.closed {
		cause = ErrClosed
	}
	unsettled := 0
	for _, a := range asgs {
		a.state, a.cause = asgRetired, cause
		unsettled += a.inflight
		m.budget.release(a.inflight, a.inflightBytes)
		a.inflight, a.inflightBytes = 0, 0
		if m.parts[a.partition] == a {
			delete(m.parts, a.partition)
		}
	}
	m.mu.Unlock()
	if unsettled > 0 {
		m.t.cfg.log().Warn("kafka: partitions revoked with deliveries in flight; their next owner reads them again",
			"queue", m.queue, "unsettled", unsettled, "timeout", timeout)
	}

	deadline := time.Now().Add(max(timeout, time.Second))
	for {
		err := m.commit(gen, asgs)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			m.t.cfg.log().Error("kafka: settled records not committed at revocation; their next owner reads them again",
				"queue", m.queue, "err", err)
			return
		}
		time.Sleep(finalCommitPause)
	}
}

// event reports an assignment event to the test hook. m.mu held.
func (m *memberReader) event(what string, partition int, offset int64) {
	if h := m.t.cfg.memberEvent; h != nil {
		h(m.queue, what, partition, offset)
	}
}

// Close stops dispatch, lets the current generation revoke its partitions
// (settle, commit) and leaves the group.
func (m *memberReader) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		m.mu.Unlock()
		signal(m.avail)
		m.closeErr = m.group.Close()
		m.cancel()
		<-m.done
		m.mu.Lock()
		m.dropBuffered(func(*assignment) bool { return true })
		m.mu.Unlock()
	})
	return m.closeErr
}
