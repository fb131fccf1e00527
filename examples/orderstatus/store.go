package orderstatus

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable marks a store that could not answer; the attempt is retried.
var ErrUnavailable = errors.New("orderstatus: store unavailable")

// Applied is the result of a successful Store.Apply.
type Applied int

const (
	// Projected means the event moved its order to a new status.
	Projected Applied = iota + 1
	// AlreadyApplied means the event, or another with the same status for
	// the order, had been applied before; nothing changed.
	AlreadyApplied
)

// String names the result.
func (a Applied) String() string {
	switch a {
	case Projected:
		return "projected"
	case AlreadyApplied:
		return "already applied"
	}
	return "unknown"
}

// Order is the projected status of one order.
type Order struct {
	ID        string
	Status    Status
	UpdatedAt time.Time
	// History lists the statuses the order went through, oldest first.
	History []Status
}

// Store keeps the projection. Implementations are safe for concurrent use.
type Store interface {
	// Apply projects e atomically: it records e.ID and moves the order to
	// e.Status when Transition allows it. An error wraps
	// ErrInvalidTransition when the move is not allowed (nothing changed);
	// any other error means the store could not tell (the processor treats it
	// as unavailable).
	Apply(ctx context.Context, e Event) (Applied, error)
	// Orders returns every order, sorted by ID.
	Orders(ctx context.Context) ([]Order, error)
	// HasEvent reports whether the event with that ID was applied.
	HasEvent(ctx context.Context, id string) (bool, error)
	// Close releases the store.
	Close() error
}
