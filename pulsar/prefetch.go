package pulsar

import (
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// prefetchDepth bounds how many prepared deliveries a queue's prefetcher
// holds for Pop, beyond the client's own receiver queue.
const prefetchDepth = 64

// prefetcher takes a queue's messages from the client's receive channel on
// a goroutine of its own and prepares them for Pop ahead of time: the
// attempts rule (received) and the decoding of the body the App would do
// first (babelqueue.ReceivedMessage.Predecode). The consume loop is then
// left with the handler and the acknowledgement, and the decoding runs on
// another core. It keeps the order the client received the messages in.
//
// A prepared delivery is still only received: until Pop hands it out and
// it is acknowledged, it is as unsettled as one in the client's receiver
// queue, and the broker redelivers it when the consumer closes. The
// Transport owns the goroutine and stops it (halt) before it closes the
// consumer.
type prefetcher struct {
	ready chan *babelqueue.ReceivedMessage // prepared deliveries, in order
	stop  chan struct{}                    // closed by halt
	done  chan struct{}                    // closed when run has returned
	once  sync.Once
}

// startPrefetch starts the prefetcher of queue's consumer slot s, which
// reads in, the client's receive channel.
func startPrefetch(queue string, s *consumerSlot, in <-chan pulsar.ConsumerMessage) *prefetcher {
	p := &prefetcher{
		ready: make(chan *babelqueue.ReceivedMessage, prefetchDepth),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go p.run(queue, s, in)
	return p
}

func (p *prefetcher) run(queue string, s *consumerSlot, in <-chan pulsar.ConsumerMessage) {
	defer close(p.done)
	for {
		var cm pulsar.ConsumerMessage
		var open bool
		select {
		case cm, open = <-in:
		case <-p.stop:
			return
		}
		if !open {
			return
		}
		if cm.Message == nil {
			continue
		}
		rm := received(queue, s, cm.Message)
		if sv, present := rm.Headers[wire.HeaderSchemaVersion]; wire.CheckSchemaVersionHeader(sv, present) == nil {
			// A message the version gate rejects by its property is
			// never decoded; every other one is decoded once, here.
			rm.Predecode()
		}
		select {
		case p.ready <- rm:
		case <-p.stop:
			return
		}
	}
}

// halt stops the prefetcher and waits until its goroutine has returned.
// The deliveries it held are dropped unsettled, for the broker to deliver
// again once the consumer is closed. Safe to call more than once.
func (p *prefetcher) halt() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}
