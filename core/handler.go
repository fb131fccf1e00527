package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Handler processes one message. A nil error acknowledges the message; any
// other error is a failure, retried up to the App's max attempts and then
// dead-lettered (or dropped). ctx carries the delivered headers (see
// HeadersFromContext and IsReplay) and is cancelled when Consume stops; an
// error returned once it is cancelled is not counted as an attempt, the
// message is handed back for redelivery. A panic is recovered and treated
// as a *PanicError.
//
// The dead letter of a failed message records dead_letter.error =
// err.Error() and dead_letter.exception = the Go type of err, written as %T
// prints it, after every fmt.Errorf %w layer has been unwrapped: returning
// fmt.Errorf("charge: %w", &PaymentError{}) records "*shop.PaymentError",
// errors.New records "*errors.errorString", and an error wrapping several
// (errors.Join) records its own type.
type Handler func(ctx context.Context, env *Envelope) error

// PanicError is the failure recorded when a handler panics. The App
// recovers the panic and treats it like a returned error.
type PanicError struct {
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine.
	Stack []byte
}

// Error returns "babelqueue: handler panicked: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("babelqueue: handler panicked: %v", e.Value) }

// Unwrap returns Value when it is an error, so errors.Is and errors.As see
// through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// UnknownURNError is the failure of a message whose URN has no handler. It
// matches ErrNoHandler.
type UnknownURNError struct {
	// URN is the route that had no handler: the bq-job header when present
	// and not blank, else the body's URN.
	URN string
}

// Error returns "babelqueue: no handler for urn: <urn>".
func (e *UnknownURNError) Error() string { return fmt.Sprintf("%v: %q", ErrNoHandler, e.URN) }

// Is reports whether target is ErrNoHandler.
func (e *UnknownURNError) Is(target error) bool { return target == ErrNoHandler }

// Handle registers h for urn, replacing any handler registered before, and
// returns an error matching ErrInvalidURN for a urn that breaks the URN rule.
//
// The rule is that of Publish (wire.ValidURN); with WithLegacyURNs only a
// blank urn breaks it. It may be called while the App consumes; the change
// applies to the next message. A nil h removes the handler. A rejected urn
// registers nothing,
// and every later Consume and Drain of the App returns the same error
// without reading anything, so that a service ignoring the result does not
// run without the handler it meant to register (the messages of the URN it
// meant would be settled as unknown). wire.ValidURN checks a URN ahead.
func (a *App) Handle(urn string, h Handler) error {
	if err := a.validHandlerURN(urn); err != nil {
		err = within("Handle", err)
		if h != nil {
			a.mu.Lock()
			a.rejected = append(a.rejected, err)
			a.mu.Unlock()
		}
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h == nil {
		delete(a.handlers, urn)
		return nil
	}
	a.handlers[urn] = h
	return nil
}

// validHandlerURN checks urn by the rule of Handle.
func (a *App) validHandlerURN(urn string) error {
	if !a.cfg.legacyURNs {
		return wire.ValidURN(urn)
	}
	if wire.IsBlank(urn) {
		return fmt.Errorf("%w %q: blank", ErrInvalidURN, urn)
	}
	return nil
}

// rejectedHandlers returns the errors of the Handle calls refused so far,
// joined; nil when there is none.
func (a *App) rejectedHandlers() error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return errors.Join(a.rejected...)
}

func (a *App) handler(urn string) Handler {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.handlers[urn]
}

// runHandler calls h, turning a panic into a *PanicError.
func runHandler(ctx context.Context, h Handler, env *Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, env)
}
