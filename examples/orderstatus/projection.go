package orderstatus

import (
	"errors"
	"fmt"
)

// Status is the status of an order.
type Status string

// The statuses, in the order of the happy path. An order that does not exist
// yet has the status StatusNone.
const (
	StatusNone      Status = ""
	StatusCreated   Status = "created"
	StatusPaid      Status = "paid"
	StatusShipped   Status = "shipped"
	StatusDelivered Status = "delivered"
	StatusCancelled Status = "cancelled"
)

// ErrInvalidTransition marks an event that does not follow its order's
// current status. It may succeed later, once its predecessor is projected.
var ErrInvalidTransition = errors.New("orderstatus: invalid transition")

// transitions lists the statuses each status may move to.
var transitions = map[Status][]Status{
	StatusNone:    {StatusCreated},
	StatusCreated: {StatusPaid, StatusCancelled},
	StatusPaid:    {StatusShipped, StatusCancelled},
	StatusShipped: {StatusDelivered},
}

// Transition checks whether an order in status current may move to next.
// It returns same=true when the order already is in next (the event was
// applied already, by this or another delivery), nil when the move is
// allowed, and an error wrapping ErrInvalidTransition otherwise.
func Transition(current, next Status) (same bool, err error) {
	if current == next && next != StatusNone {
		return true, nil
	}
	for _, s := range transitions[current] {
		if s == next {
			return false, nil
		}
	}
	from := string(current)
	if current == StatusNone {
		from = "no order"
	}
	return false, fmt.Errorf("%w: %s cannot become %s", ErrInvalidTransition, from, next)
}
