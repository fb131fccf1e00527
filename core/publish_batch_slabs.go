package babelqueue

import (
	"sync"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// batchSlabs is the memory of one PublishBatch that nothing needs once
// every write was acknowledged: the Outgoings, the pointers handed to the
// transport, and the buffer the bodies were encoded into. It is reused
// only after a transport that releases its batches (driver.BatchReleaser)
// acknowledged the whole batch and no publish hook saw the Outgoings;
// else it is left to the collector.
type batchSlabs struct {
	outs   []driver.Outgoing
	ptrs   []*driver.Outgoing
	bodies []byte
}

// maxPooledSlabs is the most messages whose slabs are kept for reuse; a
// bigger batch allocates its own.
const maxPooledSlabs = 4096

var batchSlabsPool = sync.Pool{New: func() any { return new(batchSlabs) }}

// newBatchSlabs returns slabs for n messages, from the pool when reuse
// is true: outs and ptrs of length n, bodies empty.
func newBatchSlabs(n int, reuse bool) *batchSlabs {
	if !reuse || n > maxPooledSlabs {
		return &batchSlabs{outs: make([]driver.Outgoing, n), ptrs: make([]*driver.Outgoing, n)}
	}
	s := batchSlabsPool.Get().(*batchSlabs)
	if cap(s.outs) < n {
		s.outs, s.ptrs = make([]driver.Outgoing, n), make([]*driver.Outgoing, n)
	}
	s.outs, s.ptrs, s.bodies = s.outs[:n], s.ptrs[:n], s.bodies[:0]
	return s
}

// release keeps s for a later batch: bodies is the body buffer the batch
// ended with. The Outgoings and pointers are cleared, so that they pin no
// key, header map or queue of the caller.
func (s *batchSlabs) release(bodies []byte) {
	if cap(s.outs) > maxPooledSlabs {
		return
	}
	clear(s.outs)
	clear(s.ptrs)
	if cap(bodies) <= maxBatchBuffer {
		s.bodies = bodies[:0]
	}
	batchSlabsPool.Put(s)
}

// releasesBatches reports whether the slabs of a batch acknowledged by
// a's transport may be reused: the transport says it keeps nothing of
// them and no publish hook is given the Outgoings.
func (a *App) releasesBatches() bool {
	if len(a.cfg.hooks.publish) > 0 || len(a.cfg.hooks.published) > 0 {
		return false
	}
	r, ok := a.t.(driver.BatchReleaser)
	if !ok {
		return false
	}
	_, ok = a.t.(driver.BatchSender)
	return ok && r.ReleasesBatch()
}
