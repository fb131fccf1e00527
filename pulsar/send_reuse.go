package pulsar

import (
	"context"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
)

// asyncSender is the part of pulsar.Producer a reused write needs.
type asyncSender interface {
	SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, callback func(pulsar.MessageID, *pulsar.ProducerMessage, error))
}

// write is one synchronous write through SendAsync whose message, property
// map and wait are reused by a later write once the client answered.
// pulsar-client-go's Send allocates a channel, a flag and a closure per
// call, and every write a message and a map; a write from the pool
// allocates none of them. The client's last use of the message is the
// callback (after the interceptors, which is why a producer with
// interceptors never reuses one), so the message is reused only after
// answer ran; a write whose wait ended with the context is left to the
// garbage collector, since the client still holds its message.
type write struct {
	msg    pulsar.ProducerMessage
	props  map[string]string
	done   chan answer                                            // capacity 1: the first answer; answered never blocks
	answer func(pulsar.MessageID, *pulsar.ProducerMessage, error) // w.answered, bound once
}

// maxReusedProperties bounds the property map a write keeps for reuse: a
// write that carried more headers gives its map up.
const maxReusedProperties = 16

var writes = sync.Pool{New: func() any {
	w := &write{props: make(map[string]string, 8), done: make(chan answer, 1)}
	w.answer = w.answered
	return w
}}

// takeWrite returns a write whose message is zero and whose property map
// is empty.
func takeWrite() *write { return writes.Get().(*write) }

// answered is the callback of the write: the client calls it once, when
// the broker acknowledged the message or the client refused or failed it.
func (w *write) answered(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
	select {
	case w.done <- answer{id, err}:
	default: // a second call: never made by the client, never blocking it
	}
}

// answer is what the client answered a write.
type answer struct {
	id  pulsar.MessageID
	err error
}

// send hands w's message to p and waits for the client's answer, as
// pulsar.Producer.Send does: the answer's result, or ctx.Err() when ctx
// ends first. w is released once answered, and must not be used after.
func (w *write) send(ctx context.Context, p asyncSender) (pulsar.MessageID, error) {
	p.SendAsync(ctx, &w.msg, w.answer)
	var a answer
	select {
	case a = <-w.done:
	case <-ctx.Done():
		select {
		case a = <-w.done: // answered too: the answer wins
		default:
			return nil, ctx.Err()
		}
	}
	w.release()
	return a.id, a.err
}

// release clears w and puts it back in the pool.
func (w *write) release() {
	w.msg = pulsar.ProducerMessage{}
	if len(w.props) > maxReusedProperties {
		w.props = make(map[string]string, 8)
	} else {
		clear(w.props)
	}
	writes.Put(w)
}
