package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// This file holds the consume loop of one queue when WithConcurrency is
// above 1 (core/DESIGN.md, "Concurrent handling"). Each message joins its
// lane (its key, its partition, or a lane of its own, by the Ordering); a
// lane runs one message at a time, in arrival order. n worker goroutines
// share the work: a worker with nothing to run takes the receiver role
// (one at a time, so lanes fill in arrival order), and when the message it
// reads starts an idle lane it runs that message itself, with no handoff;
// a worker that settles a message goes on with the next one of its lane.
// A worker with nothing to do parks and is woken only when a lane is ready
// or the receiver role is free and needed. A message counts as pending
// from its receive until it is settled, so at most maxPending messages of
// the queue are held.

// laneKey names a lane.
type laneKey struct {
	kind uint8 // laneByKey, laneByPartition or laneSingle
	part int32
	key  string
	seq  uint64
}

const (
	laneByKey uint8 = iota
	laneByPartition
	laneSingle
)

// lane is the ordered run of a key's (or a partition's) messages.
type lane struct {
	key     laneKey
	waiting []*ReceivedMessage // received, not yet handled, in order
	// scheduled: the lane sits in the ready queue or a worker runs its
	// head. A lane is scheduled at most once.
	scheduled bool
	// paused: a failed settle write paused the lane for the failure
	// backoff; it is scheduled again when the pause ends.
	paused bool
	// inTable: the lane table holds the lane under its key (lanetable.go).
	inTable bool
	// handingBack: a worker is handing back the lane's messages after a
	// failed settle. fence: the number of receives started when it last
	// finished. A message of the lane read by a receive that started at or
	// before the fence may have been taken from the broker before the
	// handed-back ones were back, so it is handed back too, and the
	// handed-back messages keep their place ahead of it.
	handingBack bool
	fence       uint64
}

// laneSet is the state of one queue's concurrent loop.
type laneSet struct {
	a     *App
	queue string
	order Ordering
	max   int // the pending bound

	rctx context.Context // the receive context: ends when the loop stops
	stop chan struct{}   // closed when the loop stops: pauses end
	// wake holds one token per parked worker to wake; capacity n. A
	// token is sent only for a worker counted in parked (which the send
	// decrements), so tokens and parked workers never exceed n together
	// and a send under mu never blocks. Stopping wakes every parked worker
	// the same way, so a parked worker waits on this channel alone.
	wake chan struct{}

	mu          sync.Mutex
	lanes       laneTable
	ready       []*lane // scheduled lanes no worker runs yet, in order; each holds a pending message
	pending     int     // received and not yet settled or handed back
	receiving   bool    // a worker holds the receiver role
	started     uint64  // receives started so far (the receiver role is held by one worker at a time)
	returned    uint64  // receives returned so far
	parked      int     // workers waiting for a token on wake
	stopping    bool
	seq         uint64
	released    map[string]struct{}
	readyRecv   driver.ReadyReceiver // the transport's receive that never waits, or nil (lanes_refill.go)
	readyNotify driver.ReadyNotifier // readyRecv when it also announces ready messages, or nil
	// partRecv is the transport's receive that never waits for one partition,
	// or nil: a partition lane that settled its last message takes its
	// partition's next one through it (lanes_refill.go).
	partRecv  driver.PartitionReadyReceiver
	notifying bool // readyNotify calls onReady for this queue
	// readyMissed: onReady came while the receiver role was held; the
	// worker that gives the role up acts on it (lanes_refill.go).
	readyMissed bool
	fatal       error
	recvErr     error

	pauses sync.WaitGroup // the goroutines timing lane pauses
}

// laneFor returns the lane msg joins, making it when there is none.
// s.mu held.
func (s *laneSet) laneFor(msg *ReceivedMessage) *lane {
	switch {
	case s.order == OrderNone:
		s.seq++
		return s.lanes.add(laneKey{kind: laneSingle, seq: s.seq})
	case s.order == OrderKey && msg.Key != nil:
		if l := s.lanes.byKey[string(msg.Key)]; l != nil {
			return l
		}
		return s.lanes.add(laneKey{kind: laneByKey, key: string(msg.Key)})
	default:
		if l := s.lanes.byPart[msg.Partition]; l != nil {
			return l
		}
		return s.lanes.add(laneKey{kind: laneByPartition, part: msg.Partition})
	}
}

// consumeLanes is the consume loop of one queue with n handlers at once.
// It returns nil once ctx ends, or the transport error that stopped it,
// after every goroutine it started has ended.
func (a *App) consumeLanes(ctx context.Context, queue string) error {
	cc := a.cfg.conc
	n := cc.handlers()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &laneSet{
		a: a, queue: queue, order: cc.order, max: cc.pending(),
		rctx:     rctx,
		stop:     make(chan struct{}),
		wake:     make(chan struct{}, n),
		released: make(map[string]struct{}),
	}
	s.readyRecv, _ = a.t.(driver.ReadyReceiver)
	s.readyNotify, _ = a.t.(driver.ReadyNotifier)
	s.partRecv, _ = a.t.(driver.PartitionReadyReceiver)
	s.lanes.init(s.max)
	// Handlers run on a context that outlives ctx by the settle timeout:
	// those running when the loop stops get that long to finish.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()

	var workers sync.WaitGroup
	for range n {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.work(hctx, cancel)
		}()
	}
	<-rctx.Done()

	// Stop: nothing new is received or dispatched, what waits is handed
	// back, the running handlers get the settle timeout.
	s.mu.Lock()
	s.stopping = true
	for s.parked > 0 {
		s.wake <- struct{}{}
		s.parked--
	}
	s.mu.Unlock()
	close(s.stop)
	s.handBackWaiting(hctx)
	done := make(chan struct{})
	go func() {
		workers.Wait()
		close(done)
	}()
	grace := a.cfg.clock.NewTimer(a.cfg.settleTimeout)
	select {
	case <-done:
		grace.Stop()
	case <-grace.C():
		hcancel()
		<-done
	}
	s.pauses.Wait()
	// A pause that ended, a failure or a receive while stopping may have
	// left messages behind.
	s.handBackWaiting(hctx)
	s.mu.Lock()
	if s.notifying {
		s.readyNotify.NotifyReady(queue, nil)
		s.notifying = false
	}
	s.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recvErr != nil {
		return s.recvErr
	}
	return s.fatal
}

// halted reports whether nothing more may be dispatched. s.mu held.
func (s *laneSet) halted() bool {
	return s.stopping || s.rctx.Err() != nil
}

// work runs lanes, receiving when there is nothing to run, until the loop
// stops.
func (s *laneSet) work(ctx context.Context, fail context.CancelCauseFunc) {
	for {
		l := s.next(fail)
		if l == nil {
			return
		}
		for l != nil {
			l = s.run(ctx, l, fail)
		}
	}
}

// next returns a scheduled lane for the calling worker to run: one from
// the ready queue, or the idle lane a message it received started. It
// receives while the receiver role is free and the pending bound allows,
// and parks otherwise. It returns nil once the loop stops.
func (s *laneSet) next(fail context.CancelCauseFunc) *lane {
	s.mu.Lock()
	for {
		if s.halted() {
			s.mu.Unlock()
			return nil
		}
		if len(s.ready) > 0 {
			l := s.popReadyLocked()
			s.mu.Unlock()
			return l
		}
		if s.receiving || s.pending >= s.max {
			s.parked++
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
			continue
		}
		s.receiving = true
		s.pending++
		s.started++
		receive := s.started
		s.mu.Unlock()
		msg, err := s.a.pop(s.rctx, s.queue)
		s.mu.Lock()
		s.receiving = false
		s.returned = receive
		switch {
		case err != nil:
			s.pending--
			if s.rctx.Err() == nil && s.recvErr == nil {
				s.recvErr = fmt.Errorf("babelqueue: consume %s: pop: %w", s.queue, err)
				fail(s.recvErr)
			}
			continue
		case msg == nil:
			s.pending--
			continue
		}
		if s.readyNotify != nil && !s.notifying {
			// Read once, the queue has its binding state: ask it to
			// announce ready messages from now on.
			s.notifying = s.readyNotify.NotifyReady(s.queue, s.onReady)
		}
		l := s.admitLocked(msg, receive)
		if l == nil {
			continue // it waits for its lane, or went back; receive on
		}
		// An idle lane: run it here. Someone else receives meanwhile,
		// woken now, or, when the binding announces ready messages, once
		// it holds one that is not already filed (lanes_refill.go).
		l.scheduled = true
		if s.notifying {
			s.drainReadyLocked()
		} else {
			s.wakeReceiverLocked()
		}
		s.mu.Unlock()
		return l
	}
}

// admitLocked files msg, which the receive numbered receive returned, in
// its lane. It returns the lane when msg starts an idle one (which the
// caller then schedules), else nil: msg waits in its busy or paused lane,
// or it was handed back (read while stopping, or possibly ahead of
// handed-back messages of its lane) and its pending count given back.
// s.mu held; it is released while a message is handed back.
func (s *laneSet) admitLocked(msg *ReceivedMessage, receive uint64) *lane {
	if msg.Queue == "" {
		msg.Queue = s.queue
	}
	if s.halted() {
		// Read while stopping: hand it back untouched.
		s.mu.Unlock()
		s.a.unsettle(s.rctx, msg, "consume stopped")
		s.mu.Lock()
		s.pending--
		return nil
	}
	l := s.laneFor(msg)
	if l.handingBack || receive <= l.fence {
		// Possibly read ahead of messages of its lane that were
		// handed back: it goes back too, behind them. The receiver
		// role is kept meanwhile, so that no receive overtakes it.
		s.receiving = true
		s.mu.Unlock()
		s.a.unsettle(s.rctx, msg, "an earlier message of its lane was handed back")
		s.mu.Lock()
		s.receiving = false
		s.pending--
		s.forgetIdleLocked(l)
		s.missedReadyLocked()
		return nil
	}
	l.waiting = append(l.waiting, msg)
	if l.scheduled || l.paused {
		return nil
	}
	return l
}

// wakeReceiverLocked wakes a parked worker to take the receiver role when
// it is free and the pending bound allows. s.mu held.
func (s *laneSet) wakeReceiverLocked() {
	if !s.receiving && s.pending < s.max {
		s.wakeOneLocked()
	}
}

// wakeOneLocked wakes one parked worker, if any. s.mu held.
func (s *laneSet) wakeOneLocked() {
	if s.parked == 0 {
		return
	}
	select {
	case s.wake <- struct{}{}:
		s.parked--
	default:
	}
}

// run handles the head message of l, which the caller scheduled, and
// settles it. It returns the lane the worker runs next (l again when it
// has more and no other lane is ready), or nil.
func (s *laneSet) run(ctx context.Context, l *lane, fail context.CancelCauseFunc) *lane {
	s.mu.Lock()
	if s.halted() || len(l.waiting) == 0 {
		l.scheduled = false
		s.forgetIdleLocked(l)
		s.mu.Unlock()
		return nil
	}
	msg := l.popLocked()
	s.mu.Unlock()

	out := s.a.deliver(ctx, msg)

	pause := false
	var rest []*ReceivedMessage
	s.mu.Lock()
	switch {
	case out.err != nil && errors.Is(out.err, ErrClosed):
		if s.fatal == nil {
			s.fatal = fmt.Errorf("babelqueue: consume %s: %w", s.queue, out.err)
			fail(s.fatal)
		}
	case out.settleFailed:
		// The message was handed back: the later messages of its lane
		// must not overtake it, so they go back too, and the lane rests.
		rest, l.waiting = l.waiting, nil
		pause = true
	case out.released && out.err == nil:
		if _, again := s.released[out.key]; again {
			pause = true
		} else {
			if len(s.released) >= maxReleasedMemory {
				clear(s.released)
			}
			s.released[out.key] = struct{}{}
		}
	}
	l.scheduled = false
	if pause && s.a.cfg.failureBackoff > 0 && !s.halted() {
		l.paused = true
		s.pauses.Add(1)
		go s.pauseLane(l)
	}
	fenced := out.settleFailed && s.order != OrderNone // OrderNone promises no order
	if fenced {
		l.handingBack = true
	}
	if len(rest) > 0 {
		s.mu.Unlock()
		for _, m := range rest {
			s.a.unsettle(ctx, m, "an earlier message of its lane was handed back")
		}
		s.mu.Lock()
		// The message's own pending count goes with them, last: a
		// receiver at the bound reads again only once they are back.
		s.pending -= len(rest)
	}
	s.pending--
	if fenced {
		l.handingBack = false
		l.fence = s.started
	}
	next := s.continueLocked(l)
	s.mu.Unlock()
	return next
}

// continueLocked decides what the worker that just settled a message of l
// runs next: l again when it has more and no other lane waits for a
// worker; else the first ready lane, l queued behind it; else nothing.
// A partition lane left empty first takes its partition's next message
// (refillLaneLocked). A freed pending slot is refilled (refillLocked) when
// the worker stays busy. s.mu held; released meanwhile when it refills.
func (s *laneSet) continueLocked(l *lane) *lane {
	s.refillLaneLocked(l)
	if l.scheduled || l.paused || len(l.waiting) == 0 || s.halted() {
		s.forgetIdleLocked(l)
		return nil // the worker looks for work itself (next)
	}
	l.scheduled = true
	next := l
	if len(s.ready) > 0 {
		next = s.popReadyLocked()
		s.ready = append(s.ready, l)
	}
	s.refillLocked()
	return next
}

// forgetIdleLocked lets the lane table forget l when it holds nothing and
// no one runs or pauses it. s.mu held.
func (s *laneSet) forgetIdleLocked(l *lane) {
	if !l.scheduled && !l.paused && len(l.waiting) == 0 && !l.handingBack && l.fence <= s.returned {
		s.lanes.idle(l)
	}
}

// scheduleLocked puts l on the ready queue when it has a message, is not
// scheduled or paused, and the loop is not stopping, and wakes a parked
// worker for it; it forgets an idle lane. s.mu held.
func (s *laneSet) scheduleLocked(l *lane) {
	if l.scheduled || l.paused {
		return
	}
	if len(l.waiting) == 0 {
		s.forgetIdleLocked(l)
		return
	}
	if s.halted() {
		return
	}
	l.scheduled = true
	s.ready = append(s.ready, l)
	s.wakeOneLocked()
}

// pauseLane waits the failure backoff, then schedules l again.
func (s *laneSet) pauseLane(l *lane) {
	defer s.pauses.Done()
	t := s.a.cfg.clock.NewTimer(s.a.cfg.failureBackoff)
	select {
	case <-t.C():
	case <-s.stop:
		t.Stop()
	}
	s.mu.Lock()
	l.paused = false
	s.scheduleLocked(l)
	s.mu.Unlock()
}

// handBackWaiting hands back every message waiting in a lane, in lane
// order, and gives back their pending counts.
func (s *laneSet) handBackWaiting(ctx context.Context) {
	s.mu.Lock()
	var back []*ReceivedMessage
	s.lanes.each(func(l *lane) {
		if len(l.waiting) == 0 {
			return
		}
		back = append(back, l.waiting...)
		clear(l.waiting)
		l.waiting = l.waiting[:0]
		if !l.scheduled && !l.paused {
			s.lanes.idle(l)
		}
	})
	s.mu.Unlock()
	for _, m := range back {
		s.a.unsettle(ctx, m, "consume stopped")
	}
	s.mu.Lock()
	s.pending -= len(back)
	s.mu.Unlock()
}
