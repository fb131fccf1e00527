package kafka

import (
	"context"
	"sync"
	"time"
)

// budgetRecheck is how often a fetcher waiting at the cap looks again
// without being woken.
const budgetRecheck = 50 * time.Millisecond

// recordBudget bounds the records a transport holds between fetching and
// settling: buffered for Receive or handed out and not yet settled. A
// fetcher takes a record's share before buffering it and waits while the
// budget is spent, so fetching pauses at the cap; settling, dropping a
// revoked buffer or retiring an assignment gives the share back. A single
// record larger than the byte cap is let through when nothing else is held,
// so it cannot wedge its partition.
type recordBudget struct {
	maxRecords int
	maxBytes   int64

	mu      sync.Mutex
	records int
	bytes   int64
	room    chan struct{} // closed and replaced when a share comes back while someone waits
	waiting int

	// The part of records and bytes buffered (fetched, not handed out),
	// and the partition fetchers sharing the budget (share).
	buffered      int
	bufferedBytes int64
	fetchers      int
}

func newRecordBudget(maxRecords int, maxBytes int64) *recordBudget {
	return &recordBudget{maxRecords: maxRecords, maxBytes: maxBytes, room: make(chan struct{})}
}

// acquire takes the share of one record of size bytes, waiting for room
// until ctx ends.
func (b *recordBudget) acquire(ctx context.Context, size int64) error {
	var recheck *time.Timer
	defer func() {
		if recheck != nil {
			recheck.Stop()
		}
	}()
	for {
		b.mu.Lock()
		if b.records == 0 || (b.records < b.maxRecords && b.bytes+size <= b.maxBytes) {
			b.records++
			b.bytes += size
			b.mu.Unlock()
			return nil
		}
		room := b.room
		b.waiting++
		b.mu.Unlock()
		// release wakes the waiters only an eighth below the caps; the
		// recheck lets a record through meanwhile when the rest stays
		// held (handlers holding most of a small budget).
		if recheck == nil {
			recheck = time.NewTimer(budgetRecheck)
		} else {
			recheck.Reset(budgetRecheck)
		}
		select {
		case <-room:
			// release counted this waiter out when it closed room.
		case <-recheck.C:
			b.leave(room)
		case <-ctx.Done():
			b.leave(room)
			return ctx.Err()
		}
	}
}

// release gives back the shares of records records of bytes bytes in all.
// Waiting fetchers are woken once the budget is an eighth below its caps
// (or empty), not on every record settled: they then fetch a run of
// records each instead of taking turns one record at a time.
func (b *recordBudget) release(records int, bytes int64) {
	if records == 0 {
		return
	}
	b.mu.Lock()
	b.records -= records
	b.bytes -= bytes
	if b.waiting > 0 && (b.records == 0 || b.records <= b.maxRecords-b.maxRecords/8 && b.bytes <= b.maxBytes-b.maxBytes/8) {
		// Every waiter waits on room: closing it wakes them all, so none
		// is left waiting, and a release before they run makes no new
		// channel for nobody.
		close(b.room)
		b.room = make(chan struct{})
		b.waiting = 0
	}
	b.mu.Unlock()
}

// leave counts out a waiter that stopped waiting on room before release
// closed it.
func (b *recordBudget) leave(room chan struct{}) {
	b.mu.Lock()
	if b.room == room {
		b.waiting--
	}
	b.mu.Unlock()
}

// held returns the records and bytes held.
func (b *recordBudget) held() (int, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records, b.bytes
}

// join counts in a partition fetcher sharing the budget (one with
// records buffered or about to be); quit counts it out.
func (b *recordBudget) join() {
	b.mu.Lock()
	b.fetchers++
	b.mu.Unlock()
}

func (b *recordBudget) quit() {
	b.mu.Lock()
	b.fetchers--
	b.mu.Unlock()
}

// buffer moves records records of bytes bytes of the shares held into
// (positive) or out of (negative) the buffered part.
func (b *recordBudget) buffer(records int, bytes int64) {
	b.mu.Lock()
	b.buffered += records
	b.bufferedBytes += bytes
	b.mu.Unlock()
}

// share returns the records and bytes one partition may hold buffered:
// what the records handed out and not yet settled leave of the caps,
// divided among the fetchers (at least one record and one byte). With
// every fetcher within its share the buffered records fit beside the
// records in flight, so no fetcher waits at the cap for room another
// partition's records took.
func (b *recordBudget) share() (int, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := max(b.fetchers, 1)
	inflight, inflightBytes := b.records-b.buffered, b.bytes-b.bufferedBytes
	return max((b.maxRecords-inflight)/n, 1), max((b.maxBytes-inflightBytes)/int64(n), 1)
}
