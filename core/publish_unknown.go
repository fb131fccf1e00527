package babelqueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// UnknownPublishError is the error App.Publish and App.PublishWithHeaders
// return for a publish whose outcome is unknown. It matches
// ErrPublishUnknown and the binding's cause with errors.Is and errors.As,
// names the queue and meta.id, and holds the write (envelope bytes, key,
// headers, delay) so that App.Republish can repeat it byte for byte.
type UnknownPublishError struct {
	// Queue is the queue (topic) the envelope was written to.
	Queue string
	// ID is meta.id of the envelope.
	ID string
	// Err is the binding's error.
	Err error

	out driver.Outgoing
}

// newUnknownPublishError keeps a copy of out (its header map cloned, so
// that the caller's map may change afterwards).
func newUnknownPublishError(out *driver.Outgoing, id string, err error) *UnknownPublishError {
	e := &UnknownPublishError{Queue: out.Queue, ID: id, Err: err, out: *out}
	e.out.Headers = maps.Clone(out.Headers)
	e.out.Key = bytes.Clone(out.Key) // nil stays nil, empty stays empty
	return e
}

func (e *UnknownPublishError) Error() string {
	return fmt.Sprintf("babelqueue: publish %s to %s: outcome unknown, republish it with App.Republish: %v", e.ID, e.Queue, e.Err)
}

// Unwrap gives ErrPublishUnknown and the binding's error.
func (e *UnknownPublishError) Unwrap() []error { return []error{ErrPublishUnknown, e.Err} }

// Body returns the envelope as it was written.
func (e *UnknownPublishError) Body() string { return e.out.Body }

// Republish writes again, byte for byte and with the same meta.id, the
// envelope of a publish whose outcome was unknown. It takes the write from
// err, an *UnknownPublishError returned by Publish, PublishWithHeaders or
// an earlier Republish, possibly wrapped: the same queue, bytes, meta.id,
// key, headers and delay. It returns meta.id once the transport
// acknowledged the write. Its errors follow Publish: one matching
// ErrPublishUnknown is again an *UnknownPublishError to pass to Republish;
// any other means this attempt wrote nothing (the first one may still
// have). An err that holds no *UnknownPublishError is refused with
// ErrInvalidOption, writing nothing.
func (a *App) Republish(ctx context.Context, err error) (string, error) {
	var u *UnknownPublishError
	if !errors.As(err, &u) || u == nil {
		return "", invalid("republish: the error holds no *UnknownPublishError")
	}
	out := u.out
	out.Headers = maps.Clone(u.out.Headers)
	if _, serr := a.send(ctx, &out); serr != nil {
		return "", a.publishError(&out, u.ID, serr)
	}
	return u.ID, nil
}

// publishError wraps the failed write out of the envelope id: an unknown
// outcome becomes an *UnknownPublishError, anything else keeps the
// Publish wording.
func (a *App) publishError(out *driver.Outgoing, id string, err error) error {
	if errors.Is(err, ErrPublishUnknown) {
		return newUnknownPublishError(out, id, err)
	}
	return fmt.Errorf("babelqueue: publish %s to %s: %w", id, out.Queue, err)
}
