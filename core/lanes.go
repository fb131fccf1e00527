package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// This file holds the consume loop of one queue when WithConcurrency is
// above 1 (core/DESIGN.md, "Concurrent handling"). One receiver goroutine
// reads the queue; each message joins its lane (its key, its partition, or
// a lane of its own, by the Ordering); a lane runs one message at a time,
// in arrival order, on one of n worker goroutines. The receiver takes a
// pending slot before each receive and a message gives it back once
// settled, so at most maxPending messages of the queue are held.

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
	// scheduled: the lane sits in the ready channel or a worker runs its
	// head. A lane is scheduled at most once.
	scheduled bool
	// paused: a failed settle write paused the lane for the failure
	// backoff; it is scheduled again when the pause ends.
	paused bool
}

// laneSet is the state of one queue's concurrent loop.
type laneSet struct {
	a     *App
	queue string
	order Ordering

	slots chan struct{} // pending slots, capacity maxPending
	ready chan *lane    // lanes with a message to run; capacity maxPending
	stop  chan struct{} // closed when the loop stops: idle workers and pauses end

	mu       sync.Mutex
	lanes    map[laneKey]*lane
	stopping bool
	seq      uint64
	released map[string]struct{}
	fatal    error

	pauses sync.WaitGroup // the goroutines timing lane pauses
}

// laneOf returns the lane key of msg.
func (s *laneSet) laneOf(msg *ReceivedMessage) laneKey {
	switch {
	case s.order == OrderNone:
		s.seq++
		return laneKey{kind: laneSingle, seq: s.seq}
	case s.order == OrderKey && msg.Key != nil:
		return laneKey{kind: laneByKey, key: string(msg.Key)}
	default:
		return laneKey{kind: laneByPartition, part: msg.Partition}
	}
}

// consumeLanes is the consume loop of one queue with n handlers at once.
// It returns nil once ctx ends, or the transport error that stopped it,
// after every goroutine it started has ended.
func (a *App) consumeLanes(ctx context.Context, queue string) error {
	cc := a.cfg.conc
	pending := cc.pending()
	s := &laneSet{
		a: a, queue: queue, order: cc.order,
		slots:    make(chan struct{}, pending),
		ready:    make(chan *lane, pending),
		stop:     make(chan struct{}),
		lanes:    make(map[laneKey]*lane),
		released: make(map[string]struct{}),
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Handlers run on a context that outlives ctx by the settle timeout:
	// those running when the loop stops get that long to finish.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()

	var workers sync.WaitGroup
	for range cc.handlers() {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s.work(hctx, cancel)
		}()
	}
	recvErr := s.receive(rctx)

	// Stop: nothing new is dispatched, what waits is handed back, the
	// running handlers get the settle timeout.
	s.mu.Lock()
	s.stopping = true
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
	// A pause that ended, or a failure, while stopping may have left
	// messages behind.
	s.handBackWaiting(hctx)

	if recvErr != nil {
		return recvErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// receive reads the queue until ctx ends or the transport fails, giving
// every message to its lane.
func (s *laneSet) receive(ctx context.Context) error {
	for {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		msg, err := s.a.pop(ctx, s.queue)
		if err != nil {
			<-s.slots
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("babelqueue: consume %s: pop: %w", s.queue, err)
		}
		if msg == nil {
			<-s.slots
			continue
		}
		if msg.Queue == "" {
			msg.Queue = s.queue
		}
		if ctx.Err() != nil {
			// Read while stopping: hand it back untouched.
			s.a.unsettle(ctx, msg, "consume stopped")
			<-s.slots
			return nil
		}
		s.add(msg)
	}
}

// add appends msg to its lane and schedules the lane when it is idle.
func (s *laneSet) add(msg *ReceivedMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.laneOf(msg)
	l := s.lanes[k]
	if l == nil {
		l = &lane{key: k}
		s.lanes[k] = l
	}
	l.waiting = append(l.waiting, msg)
	s.scheduleLocked(l)
}

// scheduleLocked puts l on the ready channel when it has a message, is not
// scheduled or paused, and the loop is not stopping; it forgets an idle
// lane. The send never blocks: every lane on the channel holds at least
// one of at most maxPending messages.
func (s *laneSet) scheduleLocked(l *lane) {
	if l.scheduled || l.paused {
		return
	}
	if len(l.waiting) == 0 {
		delete(s.lanes, l.key)
		return
	}
	if s.stopping {
		return
	}
	l.scheduled = true
	s.ready <- l
}

// work runs lanes until the loop stops.
func (s *laneSet) work(ctx context.Context, fail context.CancelCauseFunc) {
	for {
		select {
		case <-s.stop:
			return
		case l := <-s.ready:
			s.run(ctx, l, fail)
		}
	}
}

// run handles the head message of l and settles it.
func (s *laneSet) run(ctx context.Context, l *lane, fail context.CancelCauseFunc) {
	s.mu.Lock()
	if s.stopping || len(l.waiting) == 0 {
		l.scheduled = false
		s.mu.Unlock()
		return
	}
	msg := l.waiting[0]
	l.waiting[0] = nil
	l.waiting = l.waiting[1:]
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
	if pause && s.a.cfg.failureBackoff > 0 && !s.stopping {
		l.paused = true
		s.pauses.Add(1)
		go s.pauseLane(l)
	}
	s.scheduleLocked(l)
	s.mu.Unlock()

	for _, m := range rest {
		s.a.unsettle(ctx, m, "an earlier message of its lane was handed back")
		<-s.slots
	}
	// The message's own slot goes last: a receiver waiting at the bound
	// reads again only once the lane's later messages are back.
	<-s.slots
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
// order, and gives back their pending slots.
func (s *laneSet) handBackWaiting(ctx context.Context) {
	s.mu.Lock()
	var back []*ReceivedMessage
	for k, l := range s.lanes {
		if l.scheduled && len(l.waiting) == 0 {
			continue
		}
		back = append(back, l.waiting...)
		l.waiting = nil
		if !l.scheduled && !l.paused {
			delete(s.lanes, k)
		}
	}
	s.mu.Unlock()
	for _, m := range back {
		s.a.unsettle(ctx, m, "consume stopped")
		<-s.slots
	}
}
