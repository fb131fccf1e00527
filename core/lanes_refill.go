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

// refillLocked takes the receiver role for one receive that never waits
// when the role and a pending slot are free, and files what it returns in
// its lane; a message that starts an idle lane goes to the ready queue,
// for a parked worker. When the transport has no such receive, or holds
// nothing, a parked worker is woken to receive. s.mu held; it is released
// while the transport is called.
func (s *laneSet) refillLocked() {
	if s.receiving || s.pending >= s.max {
		return
	}
	if s.rr == nil || s.halted() {
		s.wakeOneLocked()
		return
	}
	s.receiving = true
	s.pending++
	s.started++
	receive := s.started
	s.mu.Unlock()
	msg, ok := s.rr.ReceiveReady(s.queue)
	s.mu.Lock()
	s.receiving = false
	s.returned = receive
	if !ok || msg == nil {
		s.pending--
		s.wakeReceiverLocked()
		return
	}
	if l := s.admitLocked(msg, receive); l != nil {
		s.scheduleLocked(l)
	}
	// The role is free again: a slot left over needs a receiver.
	s.wakeReceiverLocked()
}
