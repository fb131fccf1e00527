package kafka

import (
	"context"
	"errors"
	"sort"
	"sync/atomic"
)

// asgState is where an assignment stands in its life.
type asgState int

const (
	// asgLive: fetched records are buffered and handed out.
	asgLive asgState = iota
	// asgDraining: the partition is being revoked; nothing more is handed
	// out, acknowledgements of deliveries in flight are still taken.
	asgDraining
	// asgRetired: acknowledgements are refused (cause); the partition's
	// next owner, or the next assignment of this member, reads the
	// unsettled records again.
	asgRetired
)

// assignment is one partition owned by a memberReader in one generation,
// with the ledger of what it handed out. Its fields are guarded by the
// memberReader's mu. Within an assignment records are handed out in offset
// order (one fetcher, one FIFO), so the ledger is appended in order.
type assignment struct {
	m         *memberReader
	gen       groupGeneration
	partition int
	start     int64 // the offset (or relative offset) its fetcher started at
	cancel    context.CancelFunc

	state asgState
	cause error // why acknowledgements are refused once retired

	buf      []*delivery // fetched, not handed out, in offset order; in the member's ring while not empty
	bufBytes int64       // the budget shares of buf
	// resume: the fetcher waits for its FIFO to shrink to this many
	// records (waitShare); -1 when it does not wait. room wakes it.
	resume int
	room   chan struct{}
	// sharing: the fetcher counts among those sharing the budget
	// (recordBudget.join): from its start, and again after each record,
	// until it waited for the broker a while with nothing buffered.
	sharing atomic.Bool

	out       []outEntry // handed out and not yet passed by the settled prefix, in offset order
	settled   int64      // the highest offset of the settled prefix; -1 none
	committed int64      // the next offset known committed for the partition; -1 unknown

	inflight      int           // handed out, not settled
	inflightBytes int64         // their budget shares
	drained       chan struct{} // closed once draining with nothing in flight
	drainedClosed bool

	// next is the successor a hand-back retired this assignment for: it
	// re-reads the partition from its start and holds the ledger entries
	// below it, whose deliveries are still settled there.
	next *assignment
}

// outEntry is the ledger entry of a delivery an assignment handed out.
type outEntry struct {
	offset  int64
	size    int64 // its budget share, given back by a hand-back that drops the entry
	settled bool
}

var errNotReserved = errors.New("the record is not reserved (already settled)")

// settle marks off settled and moves the settled prefix.
func (a *assignment) settle(off int64) error {
	i := sort.Search(len(a.out), func(i int) bool { return a.out[i].offset >= off })
	if i == len(a.out) || a.out[i].offset != off || a.out[i].settled {
		return errNotReserved
	}
	a.out[i].settled = true
	if i > 0 {
		return nil // an earlier record is unsettled: the prefix stays
	}
	n := 0
	for n < len(a.out) && a.out[n].settled {
		n++
	}
	if n > 0 {
		a.settled = max(a.settled, a.out[n-1].offset)
		clear(a.out[:n])
		if n == len(a.out) {
			a.out = a.out[:0]
		} else {
			a.out = a.out[n:]
		}
	}
	return nil
}

// commitTarget returns the next offset to commit, and false when the
// settled prefix adds nothing to what was committed.
func (a *assignment) commitTarget() (int64, bool) {
	if a.settled < 0 || a.settled+1 <= a.committed {
		return 0, false
	}
	return a.settled + 1, true
}

// holder returns the assignment that settles the delivery at offset off
// handed out by a: a, or the successor a hand-back carried its entry to.
// A retired one refuses it (its record is read again).
func (a *assignment) holder(off int64) *assignment {
	for a.state == asgRetired && a.next != nil && off < a.next.start {
		a = a.next
	}
	return a
}

// carryBelow moves to next the ledger entries below next.start, with the
// settled prefix and the commit point, and returns how many deliveries in
// flight and budget bytes stay with a (those at or above next.start, to
// be read again). next.start is past a's settled prefix.
func (a *assignment) carryBelow(next *assignment) (int, int64) {
	next.settled, next.committed = a.settled, a.committed
	n := sort.Search(len(a.out), func(i int) bool { return a.out[i].offset >= next.start })
	next.out = append(next.out, a.out[:n]...)
	for _, e := range next.out {
		if !e.settled {
			next.inflight++
			next.inflightBytes += e.size
		}
	}
	clear(a.out)
	a.out = a.out[:0]
	return a.inflight - next.inflight, a.inflightBytes - next.inflightBytes
}

// markDrained closes drained once nothing is in flight while draining.
func (a *assignment) markDrained() {
	if a.state != asgLive && a.inflight == 0 && !a.drainedClosed {
		a.drainedClosed = true
		close(a.drained)
	}
}

// startSharing counts a's fetcher in among those sharing the budget, when
// it is not.
func (a *assignment) startSharing() {
	if a.sharing.CompareAndSwap(false, true) {
		a.m.budget.join()
	}
}

// stopSharing counts a's fetcher out, when it is in.
func (a *assignment) stopSharing() {
	if a.sharing.CompareAndSwap(true, false) {
		a.m.budget.quit()
	}
}
