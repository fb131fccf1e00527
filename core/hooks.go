package babelqueue

import (
	"context"
	"strconv"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
)

// Hook is a value that implements one or more of the hook interfaces
// below: PublishHook, PublishedHook, DeliveryHook, SettleHook, RedriveHook,
// and driver.ReinjectHook, driver.ReinjectBacklogHook and
// driver.StaleTierHook. The App (WithHooks), Redrive (redrive.WithHooks)
// and a binding report their own decisions to the hooks they hold, so that
// telemetry never has to guess them from the traffic.
//
// Hooks are called synchronously, in the order they were registered, from
// the goroutine doing the work; a hook must be quick and safe for
// concurrent use, and must not keep the values it is handed past the call
// unless it copies them. A panic in a hook is recovered and ignored. An App
// without hooks pays nothing for them.
type Hook = any

// PublishHook is called before every write the App makes, new messages and
// settle writes alike; out.Intent says which. A settle write is a retry
// copy, a dead letter, a release or a forward. It may add headers to
// out.Headers, which is never nil here (a traceparent, say), and returns
// the context the write, and the PublishedHook after it, run with.
type PublishHook interface {
	OnPublish(ctx context.Context, out *driver.Outgoing) context.Context
}

// PublishedHook is called after every write the App made, with what the
// binding reported of it and its error (nil once the broker acknowledged
// it).
type PublishedHook interface {
	OnPublished(ctx context.Context, out *driver.Outgoing, r driver.Receipt, err error)
}

// DeliveryHook is called when the App starts on a delivery, before the
// version gate, the handler or any settlement. The context it returns is
// the one the handler and the SettleHook see.
type DeliveryHook interface {
	OnDelivery(ctx context.Context, d *Delivery) context.Context
}

// SettleHook is called once per delivery, when the App has settled it (or
// left it for redelivery), with what it decided.
type SettleHook interface {
	OnSettle(ctx context.Context, d *Delivery, s *Settlement)
}

// RedriveHook is called once per dead letter a Redrive run examined, after
// it was settled.
type RedriveHook interface {
	OnRedrive(ctx context.Context, dlq string, item redrive.Item)
}

// Delivery describes one delivery to the hooks. Its fields fill in as the
// App learns them: at OnDelivery only Message and Queue are set; at
// OnSettle, Envelope and URN are set when the body decoded.
type Delivery struct {
	// Message is the reserved message. Hooks read it (Header) and must not
	// change it.
	Message *ReceivedMessage
	// Queue is the queue it was read from.
	Queue string
	// Envelope is the decoded body; nil for a poison or version-gated one.
	Envelope *Envelope
	// URN is the route (the bq-job header, else the body's URN); empty
	// when neither could be read.
	URN string
}

// Outcome is how the App settled a delivery.
type Outcome uint8

const (
	// OutcomeHandled: the handler succeeded and the message was
	// acknowledged.
	OutcomeHandled Outcome = iota + 1
	// OutcomeRetried: a copy for the next attempt was written (or the
	// binding's redelivery will make it) and the original settled.
	OutcomeRetried
	// OutcomeDeadLettered: written to the dead-letter queue, then
	// acknowledged.
	OutcomeDeadLettered
	// OutcomeDropped: acknowledged without a copy because dead-lettering
	// is off (attempts exhausted, a version-gated or unknown-URN message).
	OutcomeDropped
	// OutcomeReleased: handed to its queue unchanged for another consumer
	// (StrategyRelease).
	OutcomeReleased
	// OutcomeDeleted: acknowledged without a copy by StrategyDelete.
	OutcomeDeleted
	// OutcomeHandedBack: left unsettled for redelivery, because a settle
	// write or acknowledge failed or the consumer was stopping. Err wraps
	// ErrSettle in the first case and is nil in the second.
	OutcomeHandedBack
)

var outcomeNames = [...]string{"", "handled", "retried", "dead_lettered", "dropped", "released", "deleted", "handed_back"}

// String names the outcome: handled, retried, dead_lettered, dropped,
// released, deleted, handed_back.
func (o Outcome) String() string {
	if o != 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Settlement is what the App decided for one delivery.
type Settlement struct {
	Outcome Outcome
	// Reason is why a message was retried, dead-lettered or dropped:
	// wire.ReasonFailed, wire.ReasonUnknownURN, wire.ReasonPoison,
	// wire.ReasonInvalidPayload, wire.ReasonDecryptFailed,
	// wire.ReasonVersionGated, or
	// wire.ReasonOversize when its retry copy or dead letter was refused
	// as too large (ErrTooLarge) and a bounded dead letter took its place
	// (dead-lettered; dropped with dead-lettering off; Err wraps the
	// handler's error and the refusal); empty for the other outcomes.
	Reason string
	// Target is the queue the settle write went to (the retry tier topic
	// the binding chose, the dead-letter queue, the released queue); empty
	// when nothing was written.
	Target string
	// Delay is the delay of a retry, when the binding reported one.
	Delay time.Duration
	// Deliveries is how many deliveries of the message the contract has
	// counted, this one included (1 on the first): the envelope's attempts + 1.
	//
	// A retry copy and a dead letter written for this delivery carry it as
	// their attempts, so Deliveries, the log attribute "deliveries" and a
	// dead letter's attempts are one count. Zero when nothing was decoded.
	Deliveries int
	// Err is the handler's error, the reason of a rejection, or a settle
	// failure wrapping ErrSettle.
	Err error
	// HandlerDuration is how long the handler ran, on the App's clock;
	// zero when no handler ran (HandlerRan is false).
	HandlerDuration time.Duration
	HandlerRan      bool
	// HandlerErr is what the handler returned (a panic as a *PanicError);
	// nil when it succeeded or did not run. Unlike Err it survives a
	// failed settlement.
	HandlerErr error
}

// hookSet holds an App's hooks by kind, so that an App without a kind of
// hook tests one slice length.
type hookSet struct {
	publish   []PublishHook
	published []PublishedHook
	delivery  []DeliveryHook
	settle    []SettleHook
	redrive   []RedriveHook
}

// add files h under every hook interface it implements, and reports
// whether it implements at least one.
func (s *hookSet) add(h Hook) bool {
	n := 0
	if x, ok := h.(PublishHook); ok {
		s.publish, n = append(s.publish, x), n+1
	}
	if x, ok := h.(PublishedHook); ok {
		s.published, n = append(s.published, x), n+1
	}
	if x, ok := h.(DeliveryHook); ok {
		s.delivery, n = append(s.delivery, x), n+1
	}
	if x, ok := h.(SettleHook); ok {
		s.settle, n = append(s.settle, x), n+1
	}
	if x, ok := h.(RedriveHook); ok {
		s.redrive, n = append(s.redrive, x), n+1
	}
	if _, ok := h.(driver.ReinjectHook); ok {
		n++ // reported by bindings' re-injectors, not by the App
	}
	if _, ok := h.(driver.ReinjectBacklogHook); ok {
		n++
	}
	if _, ok := h.(driver.StaleTierHook); ok {
		n++
	}
	return n > 0
}

func (s *hookSet) onPublish(ctx context.Context, out *driver.Outgoing) context.Context {
	if len(s.publish) == 0 {
		return ctx
	}
	if out.Headers == nil {
		out.Headers = make(map[string]string)
	}
	for _, h := range s.publish {
		safely(func() {
			if c := h.OnPublish(ctx, out); c != nil {
				ctx = c
			}
		})
	}
	return ctx
}

func (s *hookSet) onPublished(ctx context.Context, out *driver.Outgoing, r driver.Receipt, err error) {
	for _, h := range s.published {
		safely(func() { h.OnPublished(ctx, out, r, err) })
	}
}

func (s *hookSet) onDelivery(ctx context.Context, d *Delivery) context.Context {
	for _, h := range s.delivery {
		safely(func() {
			if c := h.OnDelivery(ctx, d); c != nil {
				ctx = c
			}
		})
	}
	return ctx
}

func (s *hookSet) onSettle(ctx context.Context, d *Delivery, st *Settlement) {
	for _, h := range s.settle {
		safely(func() { h.OnSettle(ctx, d, st) })
	}
}

// observed reports whether any hook looks at deliveries.
func (s *hookSet) observed() bool { return len(s.delivery) > 0 || len(s.settle) > 0 }
