package idempotency

import (
	"context"
	"errors"
	"time"
)

// State is what a Store says about an id when a delivery asks to claim it.
type State int

const (
	// Claimed: the caller holds the id's lease and may run the effect. It
	// must then Complete (success) or Release (failure) with its token.
	Claimed State = iota + 1
	// Done: the id is remembered; the effect already happened.
	Done
	// Busy: another delivery holds a live lease on the id right now.
	Busy
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case Done:
		return "done"
	case Busy:
		return "busy"
	}
	return "unknown"
}

// ErrLeaseLost reports a Complete or Release whose token no longer holds
// the id: the lease expired and another delivery claimed it.
var ErrLeaseLost = errors.New("idempotency: lease lost")

// Store is the seen-set behind Wrap: one record per message id, either
// claimed or done. A claimed id is a lease held by one delivery, identified
// by its token, until an expiry; a done id is remembered until an expiry.
// Implementations must make Claim atomic: of two concurrent Claims of one
// id at most one returns Claimed while the lease is live.
type Store interface {
	// Claim takes the id for a run of lease. A done record whose expiry has
	// passed and a claim whose lease has passed count as absent.
	Claim(ctx context.Context, id, token string, lease time.Duration) (State, error)
	// Complete turns the caller's claim into a done record kept for ttl
	// (ttl <= 0: kept until Forget or cleanup by the store's own rules).
	// It returns ErrLeaseLost when token no longer holds the id.
	Complete(ctx context.Context, id, token string, ttl time.Duration) error
	// Release drops the caller's claim so a later delivery runs again. A
	// token that no longer holds the id is not an error.
	Release(ctx context.Context, id, token string) error
	// Forget removes the id whatever its state (manual replay).
	Forget(ctx context.Context, id string) error
}
