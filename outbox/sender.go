package outbox

import (
	"context"
	"errors"
	"fmt"

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

// BatchSender is a Sender that also publishes a whole claimed batch in one
// hand-over to its broker client. The relay uses SendBatch when the sender
// has it (and, for a TransportSender, when its transport is a
// driver.BatchSender). SendBatch returns nil when the broker acknowledged
// every message, else one error per message, in order (nil: acknowledged).
// Messages of one order key are in batch order and must reach the broker
// in that order.
type BatchSender interface {
	Sender
	SendBatch(ctx context.Context, msgs []Message) []error
}

// ErrEarlierFailed is the outcome of a message not sent because an earlier
// message of its order key in the same batch failed.
var ErrEarlierFailed = errors.New("outbox: not sent: an earlier message of its order key failed")

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
	_, err := s.Transport.Send(ctx, outgoing(queue, key, string(body), headers))
	return err
}

// SendBatch implements BatchSender: one driver.BatchSender.SendBatch call
// when the transport has it, else one Send per message in order, a failed
// message failing the later ones of its order key with ErrEarlierFailed.
func (s TransportSender) SendBatch(ctx context.Context, msgs []Message) []error {
	bs, ok := s.Transport.(driver.BatchSender)
	if !ok {
		return sendEach(ctx, s, msgs)
	}
	outs := make([]*driver.Outgoing, len(msgs))
	for i, m := range msgs {
		outs[i] = outgoing(m.Queue, m.Key, string(m.Body), m.Headers)
	}
	return sendOutgoing(ctx, bs, outs)
}

// sendOutgoing hands outs to bs in one SendBatch call and returns nil or
// one outcome per message.
func sendOutgoing(ctx context.Context, bs driver.BatchSender, outs []*driver.Outgoing) []error {
	_, err := bs.SendBatch(ctx, outs)
	if err == nil {
		return nil
	}
	errs := make([]error, len(outs))
	var each driver.SendErrors
	if errors.As(err, &each) && len(each) == len(outs) {
		copy(errs, each)
		return errs
	}
	for i := range errs {
		errs[i] = fmt.Errorf("outbox: send batch: %w", err)
	}
	return errs
}

// batches returns s as a BatchSender when the relay should hand it whole
// rounds: a BatchSender, or a TransportSender whose transport batches.
func batches(s Sender) (BatchSender, bool) {
	if ts, ok := s.(TransportSender); ok {
		_, ok := ts.Transport.(driver.BatchSender)
		return ts, ok
	}
	bs, ok := s.(BatchSender)
	return bs, ok
}

// sendEach sends msgs one by one, in order; after a failure the later
// messages of the same order key are not sent (ErrEarlierFailed).
func sendEach(ctx context.Context, s Sender, msgs []Message) []error {
	var errs []error
	failed := map[string]bool{}
	for i, m := range msgs {
		err := ErrEarlierFailed
		if !failed[m.OrderKey] {
			err = s.Send(ctx, m.Queue, m.Key, m.Body, m.Headers)
		}
		if err == nil {
			continue
		}
		failed[m.OrderKey] = true
		if errs == nil {
			errs = make([]error, len(msgs))
		}
		errs[i] = err
	}
	return errs
}

func outgoing(queue string, key []byte, body string, headers map[string]string) *driver.Outgoing {
	return &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Key: key, Body: body, Headers: headers}
}
