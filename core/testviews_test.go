package babelqueue

import (
	"context"
	"maps"
)

// view is an InMemoryTransport seen through other Features, standing for
// a binding that supports less: the App reads f, and writes and hand-backs
// follow it, on the storage of the transport it views.
type view struct {
	*InMemoryTransport
	f Features
}

func (v view) Features() Features { return v.f }

func (v view) Send(ctx context.Context, out *Outgoing) (Receipt, error) {
	return v.send(out, v.f)
}

func (v view) HandBack(ctx context.Context, msg *ReceivedMessage) error {
	return v.handBackAs(msg, v.f.HandBack)
}

// only views mem as a binding with no features at all.
func only(mem *InMemoryTransport) Transport { return view{mem, Features{}} }

// with views mem with its features changed by fn.
func with(mem *InMemoryTransport, fn func(*Features)) Transport {
	f := mem.Features()
	fn(&f)
	return view{mem, f}
}

// publishH writes a new message with out-of-band headers.
func publishH(mem *InMemoryTransport, queue, body string, headers map[string]string) error {
	_, err := mem.Send(context.Background(), &Outgoing{Intent: IntentPublish, Queue: queue, Body: body, Headers: headers})
	return err
}

// forward writes body with exactly headers, as a foreign producer would.
func forward(mem *InMemoryTransport, queue, body string, headers map[string]string) error {
	_, err := mem.Send(context.Background(), &Outgoing{Intent: IntentForward, Queue: queue, Body: body, Headers: maps.Clone(headers)})
	return err
}
