package driver

import (
	"errors"

	"github.com/babelqueue/babelqueue-go/core/option"
)

// DefaultDeadLetterSuffix names the dead-letter queue of queue q: q +
// DefaultDeadLetterSuffix, the one suffix the App, redrive.Run and every
// binding use unless configured otherwise.
const DefaultDeadLetterSuffix = ".dlq"

// Sentinel errors a binding returns, wrapped with context; match them with
// errors.Is. The user package babelqueue exports the same values.
var (
	// ErrDelayUnsupported is returned by a delayed or tiered publish that the
	// binding cannot honour; nothing was written.
	ErrDelayUnsupported = errors.New("babelqueue: delay not supported")
	// ErrSettle marks a failed retry, dead-letter or acknowledge write: the
	// original message was left unsettled and will be delivered again.
	ErrSettle = errors.New("babelqueue: message not settled")
	// ErrClosed is returned by calls on a closed App or transport.
	ErrClosed = errors.New("babelqueue: closed")
	// ErrInvalidOption marks a rejected configuration value (the value of
	// option.ErrInvalidOption, which the options of every module wrap).
	ErrInvalidOption = option.ErrInvalidOption
	// ErrRedriveBusy is returned by a redrive that found another run
	// holding the dead-letter queue's cursor; it read, wrote and settled
	// nothing. The bindings' own ErrRedriveBusy values match it.
	ErrRedriveBusy = errors.New("babelqueue: another redrive holds the cursor")
	// ErrPublishUnknown marks a write whose outcome is unknown: it left the
	// client but no acknowledgement came back, so the message may be stored.
	// A binding wraps it into every such error of Send and its publish
	// calls; any other write error means nothing was written.
	ErrPublishUnknown = errors.New("babelqueue: publish outcome unknown")
)
