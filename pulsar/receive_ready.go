package pulsar

import (
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

var _ driver.ReadyReceiver = (*Transport)(nil)

// ReceiveReady is Pop without the wait: the next delivery of queue the
// prefetcher has already prepared, in the order Pop hands them out, or
// (nil, false) when it holds none, when queue was never popped (it never
// subscribes), or when the Transport is closed. The App's concurrent
// consume loop calls it to refill a pending slot on the worker that freed
// it (driver.ReadyReceiver).
func (t *Transport) ReceiveReady(queue string) (*babelqueue.ReceivedMessage, bool) {
	if t.closed.Load() {
		return nil, false
	}
	s := t.popped.Load()
	if s == nil || s.queue != queue {
		v, ok := t.subscribed.Load(queue)
		if !ok {
			return nil, false
		}
		s = v.(*consumerSlot)
	}
	if s.pre == nil {
		return nil, false
	}
	return s.pre.take()
}
