package kafka

import (
	"errors"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// This file holds the receive that never waits (driver.ReadyReceiver) of a
// queue read by a group member. It takes from the member reader's buffer,
// the one Receive takes from, so the guarantees of DESIGN.md, "Revocation
// and Close", hold unchanged: a record of a partition no longer held is
// never handed out, the same per-partition turn decides the order, and
// every buffered record holds its share of the transport's budget.
//
// The Transport does not announce ready records (driver.ReadyNotifier):
// measured on the broker-free App bench, the App's loop draining announced
// records costs more CPU per record than it saves here (DESIGN.md,
// "Receive without waiting").

var _ driver.ReadyReceiver = (*Transport)(nil)

// ReceiveReady is Receive without the wait: the next record of queue the
// member reader already fetched, in Receive's order, with the headers
// deferred.
//
// It returns (nil, false) when the reader holds none, when queue was never
// received (it never joins the group), when queue is read through a Reader
// (WithReaderFactory: a Reader cannot be asked without waiting) or when the
// Transport is closed. The App's concurrent consume loop calls it to refill
// a pending slot on the worker that freed it.
func (t *Transport) ReceiveReady(queue string) (*babelqueue.ReceivedMessage, bool) {
	m := t.readyMemberOf(queue, false)
	if m == nil {
		return nil, false
	}
	d, err := m.tryReceive(true)
	if errors.Is(err, errReaderClosed) {
		// A member kept from before a HandBack or Close: look again.
		if m = t.readyMemberOf(queue, true); m != nil {
			d, err = m.tryReceive(true)
		}
	}
	if d == nil || err != nil {
		return nil, false
	}
	return t.handOut(queue, d), true
}

var _ driver.PartitionReadyReceiver = (*Transport)(nil)

// ReceiveReadyFrom is ReceiveReady for one partition
// (driver.PartitionReadyReceiver): its next fetched record, in offset order
// and out of the partitions' turn.
//
// The headers are deferred. It returns (nil, false) when the reader holds
// none, when the partition is not assigned to this member (or is being
// revoked) and in the cases where ReceiveReady returns nothing. The App's
// concurrent loop calls it when a lane ordered by partition settled its
// last record, so that the lane goes on at once.
func (t *Transport) ReceiveReadyFrom(queue string, partition int32) (*babelqueue.ReceivedMessage, bool) {
	m := t.readyMemberOf(queue, false)
	if m == nil {
		return nil, false
	}
	d, err := m.tryReceiveFrom(int(partition))
	if errors.Is(err, errReaderClosed) {
		if m = t.readyMemberOf(queue, true); m != nil {
			d, err = m.tryReceiveFrom(int(partition))
		}
	}
	if d == nil || err != nil {
		return nil, false
	}
	return t.handOut(queue, d), true
}

// readyMemberOf returns the member reader of queue when the Transport is
// open and one reads queue, without joining the group; else nil. The last
// one found is kept, so that the consume loop's calls do not take t.mu;
// fresh looks it up again.
func (t *Transport) readyMemberOf(queue string, fresh bool) *memberReader {
	if t.closed.Load() {
		return nil
	}
	if c := t.readyMember.Load(); !fresh && c != nil && c.queue == queue {
		return c.member
	}
	t.mu.Lock()
	c, ok := t.readers[queue]
	t.mu.Unlock()
	if !ok || c.member == nil {
		return nil
	}
	t.readyMember.Store(c)
	return c.member
}
