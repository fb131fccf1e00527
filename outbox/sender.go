package outbox

import (
	"context"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// Sender publishes one message and returns once the broker acknowledged it
// (nil) or refused it. Any binding can be one; TransportSender adapts a
// babelqueue.Transport. Send is called from several goroutines at once, for
// rows of different order keys.
type Sender interface {
	Send(ctx context.Context, queue string, key []byte, body []byte, headers map[string]string) error
}

// SenderFunc is a function that is a Sender.
type SenderFunc func(ctx context.Context, queue string, key []byte, body []byte, headers map[string]string) error

// Send calls f.
func (f SenderFunc) Send(ctx context.Context, queue string, key []byte, body []byte, headers map[string]string) error {
	return f(ctx, queue, key, body, headers)
}

// TransportSender publishes through a babelqueue.Transport (the kafka and
// pulsar bindings, the in-memory one): an IntentPublish write of the body
// as stored, its key and headers; the binding adds its contract headers.
type TransportSender struct {
	Transport babelqueue.Transport
}

// Send implements Sender.
func (s TransportSender) Send(ctx context.Context, queue string, key []byte, body []byte, headers map[string]string) error {
	_, err := s.Transport.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Key: key, Body: string(body), Headers: headers})
	return err
}
