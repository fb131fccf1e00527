package babelqueue

// This file holds how a concurrent consume loop (lanes.go) refills a
// pending slot that a busy worker freed. Without help from the transport
// a parked worker is woken to take the receiver role and call Receive: a
// goroutine wake-up per settled message whenever the loop sits at its
// pending bound (one hot lane holding every pending message, say). A
// transport that reads ahead (driver.ReadyReceiver) lets the worker that
// freed the slot take a message it already holds, under the receiver
// role, in receive order, and go on with its lane; only when it holds
// none is a parked worker woken to wait in Receive.
//
// A lane ordered by partition that settled its last message goes on with
// the next message of its partition when the transport already holds one
// (driver.PartitionReadyReceiver): it does not wait for the queue's
// receive order to reach that message, behind the other partitions'
// messages the receiver files first, nor for another lane's settlement to
// free a pending slot (core/DESIGN.md, "Concurrent handling").

// refillLocked refills the pending slot a busy worker freed: with a
// transport that has a receive that never waits it takes the receiver
// role for one such call (every call up to the bound when the transport
// announces ready messages) and files what it returns in its lane; a
// message that starts an idle lane goes to the ready queue, for a parked
// worker. When the transport has no such receive, or holds nothing and
// announces nothing, a parked worker is woken to receive. s.mu held; it is
// released while the transport is called.
func (s *laneSet) refillLocked() {
	if s.receiving || s.pending >= s.max {
		return
	}
	if s.readyRecv == nil || s.halted() {
		s.wakeOneLocked()
		return
	}
	if s.notifying {
		s.drainReadyLocked()
		return
	}
	s.receiveReadyLocked()
	// The role is free again: a slot left over needs a receiver.
	s.wakeReceiverLocked()
}

// drainReadyLocked files every message the transport already holds, up to
// the pending bound, by receives that never wait. The transport announces
// (onReady) the messages that become ready afterwards while nobody
// receives, so the receiver role may stay free. s.mu held; released while
// the transport is called.
func (s *laneSet) drainReadyLocked() {
	for !s.receiving && s.pending < s.max && !s.halted() {
		if !s.receiveReadyLocked() {
			return
		}
	}
}

// receiveReadyLocked takes the receiver role for one receive that never
// waits and files the message it returns, reporting whether there was one.
// The caller checked that the role and a pending slot are free. s.mu held;
// released while the transport is called.
func (s *laneSet) receiveReadyLocked() bool {
	s.receiving = true
	s.pending++
	s.started++
	receive := s.started
	s.mu.Unlock()
	msg, ok := s.readyRecv.ReceiveReady(s.queue)
	s.mu.Lock()
	s.receiving = false
	s.returned = receive
	if !ok || msg == nil {
		s.pending--
		s.missedReadyLocked()
		return false
	}
	if l := s.admitLocked(msg, receive); l != nil {
		s.scheduleLocked(l)
	}
	return true
}

// onReady is the transport's announcement (driver.ReadyNotifier) that it
// holds a new ready message while nobody waits in Receive: a parked
// worker is woken to take the receiver role, when it is free and the
// pending bound allows.
func (s *laneSet) onReady() {
	s.mu.Lock()
	if s.receiving {
		// The holder may be in a receive that looked before the message
		// was ready and comes back empty: it acts on this when it gives
		// the role up (missedReadyLocked).
		s.readyMissed = true
	} else if !s.halted() {
		s.wakeReceiverLocked()
	}
	s.mu.Unlock()
}

// missedReadyLocked acts on an announcement that came while the receiver
// role was held, once the role is free again: the message it announced
// may be ready with nobody to receive it, so a parked worker is woken to
// take the role. s.mu held.
func (s *laneSet) missedReadyLocked() {
	if s.readyMissed && !s.receiving {
		s.readyMissed = false
		if !s.halted() {
			s.wakeReceiverLocked()
		}
	}
}

// refillLaneLocked gives l, a lane that just settled a message, the next
// message of its partition when l is a partition lane left empty, the
// transport holds one (driver.PartitionReadyReceiver), the receiver role
// is free and the pending bound allows: it takes the role for that one
// call, so that the message is filed in receive order, and holds l
// meanwhile (scheduled), so that it stays with this worker. A message of
// the partition that joins another lane (a keyed one under OrderKey) is
// filed as a receiver files it. s.mu held; released while the transport
// is called.
func (s *laneSet) refillLaneLocked(l *lane) {
	if s.partRecv == nil || l.key.kind != laneByPartition || len(l.waiting) > 0 || l.scheduled || l.paused ||
		l.handingBack || s.receiving || s.pending >= s.max || s.halted() {
		return
	}
	l.scheduled = true
	s.receiving = true
	s.pending++
	s.started++
	receive := s.started
	s.mu.Unlock()
	msg, ok := s.partRecv.ReceiveReadyFrom(s.queue, l.key.part)
	s.mu.Lock()
	s.receiving = false
	s.returned = receive
	l.scheduled = false
	if !ok || msg == nil {
		s.pending--
		s.missedReadyLocked()
		return
	}
	if other := s.admitLocked(msg, receive); other != nil && other != l {
		s.scheduleLocked(other)
	}
}
