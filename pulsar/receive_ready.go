package pulsar

import (
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

var _ driver.ReadyNotifier = (*Transport)(nil)

// ReceiveReady is Pop without the wait: the next delivery of queue already
// prepared, in the order Pop hands them out (driver.ReadyReceiver).
//
// It returns (nil, false) when the prefetcher holds none (in direct mode,
// when the client's receive channel holds none), when queue was never
// popped (it never subscribes), or when the Transport is closed. The App's
// concurrent consume loop calls it to refill a pending slot on the worker
// that freed it.
func (t *Transport) ReceiveReady(queue string) (*babelqueue.ReceivedMessage, bool) {
	s := t.prefetched(queue)
	if s == nil {
		return nil, false
	}
	return s.pre.takeReady()
}

var _ driver.PartitionReadyReceiver = (*Transport)(nil)

// ReceiveReadyFrom is ReceiveReady for one partition of a partitioned
// topic: the first delivery of partition already prepared, ahead of the
// other partitions'. It is the driver.PartitionReadyReceiver of the
// Transport. Each partition keeps its order; it returns (nil, false) when
// the prefetcher holds none of the partition's deliveries. It hands out
// nothing in direct mode (before NotifyReady). The App's lane of a partition (OrderPartition, on a
// Failover or Exclusive subscription) takes its next message through it as
// soon as it settled the last one.
func (t *Transport) ReceiveReadyFrom(queue string, partition int32) (*babelqueue.ReceivedMessage, bool) {
	s := t.prefetched(queue)
	if s == nil {
		return nil, false
	}
	return s.pre.takeFrom(partition)
}

// NotifyReady makes the prefetcher of queue call fn after it filed a
// prepared batch while no Pop waited (driver.ReadyNotifier); nil stops it.
// The App's concurrent loop then need not keep a worker waiting in Pop. A
// non-nil fn switches the prefetcher from direct receives to prefetching on
// goroutines of its own, for good (a consumer per partition prefetches
// already). It reports false when queue has no
// prefetcher (never popped, a consumer without a receive channel) or the
// Transport is closed.
func (t *Transport) NotifyReady(queue string, fn func()) bool {
	s := t.prefetched(queue)
	if s == nil {
		return false
	}
	if fn == nil {
		s.pre.notify.Store(nil)
	} else {
		s.pre.notify.Store(&fn)
		s.pre.start()
	}
	return true
}

// prefetched returns the consumer slot of queue when it has a prefetcher
// and the Transport is open, without subscribing; else nil.
func (t *Transport) prefetched(queue string) *consumerSlot {
	if t.closed.Load() {
		return nil
	}
	s := t.popped.Load()
	if s == nil || s.queue != queue {
		v, ok := t.subscribed.Load(queue)
		if !ok {
			return nil
		}
		s = v.(*consumerSlot)
	}
	if s.pre == nil {
		return nil
	}
	return s
}
