package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// PayloadValidator checks the data object of a message against the schema
// registered for its URN (the schema module's Registry is one). It returns
// nil for a valid payload and for a URN it has no schema for; an invalid
// payload is an error, which should match ErrInvalidPayload and say what
// is wrong (it becomes dead_letter.error).
type PayloadValidator interface {
	ValidatePayload(urn string, data []byte) error
}

// WithPayloadValidator makes the App check every payload against v, on
// both sides. Publish of an invalid payload returns an error matching
// ErrInvalidPayload and writes nothing. A consumed message with an invalid
// payload never reaches its handler and is never retried: it is
// dead-lettered at once with reason wire.ReasonInvalidPayload and the
// validation errors in dead_letter.error (acknowledged and dropped, with a
// warning, when dead-lettering is off). The check runs in the delivery
// path, so it also runs on the handler goroutines under WithConcurrency.
// A nil validator is rejected; without this option payloads are not
// checked.
func WithPayloadValidator(v PayloadValidator) Option {
	return func(c *config) {
		if v == nil {
			c.fail("payload validator is nil")
			return
		}
		c.payloadValidator = v
	}
}

// invalidPayloadError is a rejection by the PayloadValidator that matches
// ErrInvalidPayload whatever error the validator returned.
type invalidPayloadError struct {
	urn string
	err error
}

func (e *invalidPayloadError) Error() string {
	return fmt.Sprintf("invalid payload for %s: %v", e.urn, e.err)
}

func (e *invalidPayloadError) Unwrap() []error { return []error{ErrInvalidPayload, e.err} }

// validatePayload runs the App's PayloadValidator on env's data.
func (a *App) validatePayload(urn string, env *Envelope) error {
	v := a.cfg.payloadValidator
	if v == nil {
		return nil
	}
	err := v.ValidatePayload(urn, env.Data())
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalidPayload) {
		return err
	}
	return &invalidPayloadError{urn: urn, err: err}
}

// settleInvalidPayload dead-letters a consumed message whose payload the
// validator rejects; ok is false when the payload is valid (or there is no
// validator) and the delivery goes on to its handler.
func (a *App) settleInvalidPayload(ctx context.Context, msg *ReceivedMessage, env *Envelope, route string) (out outcome, ok bool) {
	cause := a.validatePayload(route, env)
	if cause == nil {
		return outcome{}, false
	}
	msg.FillHeaders()
	attrs := a.attrs(msg, env, route, slog.String("reason", wire.ReasonInvalidPayload))
	if !a.cfg.deadLetter {
		out := a.ack(ctx, msg, env, route)
		if out.err == nil {
			a.reportWarning(ctx, "babelqueue: message with an invalid payload dropped", a.deliveryErr(msg, env, route, fmt.Errorf("dropped (dead-lettering off): %w", cause)), attrs...)
		}
		return settled(out, Settlement{Outcome: OutcomeDropped, Reason: wire.ReasonInvalidPayload, Err: cause}), true
	}
	a.reportError(ctx, "babelqueue: invalid payload", a.deliveryErr(msg, env, route, cause), attrs...)
	return a.deadLetter(ctx, msg, env, route, wire.ReasonInvalidPayload, cause, wire.Decide(env.Attempts, 1, true).Counted), true
}
